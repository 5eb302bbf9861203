import { createHash } from 'node:crypto';
import {
  assertDuration,
  assertObject,
  type Clock,
  InvalidOptionsError,
  StratusError,
  systemClock,
} from '@stratus/core';
import {
  assertBlobKey,
  assertBlobKeyPrefix,
  type BlobInfo,
  type BlobListOptions,
  type BlobPage,
  type BlobStore,
  checkListOptions,
  isBlobKey,
} from './blob-store.js';
import { BlobStoreClosedError } from './errors.js';
import { type AwsCredentials, sha256Hex, signRequest, uriEncodePath } from './sigv4.js';

export interface S3BlobStoreOptions {
  /** The service's base URL: `https://s3.eu-west-1.amazonaws.com`, `http://127.0.0.1:9000` (MinIO)... */
  endpoint: string;
  bucket: string;
  /** The signing region ('us-east-1' for most S3-compatible servers). */
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /**
   * Address the bucket in the path (`<endpoint>/<bucket>/<key>`, default true: what S3-compatible servers
   * expect) rather than in the host name (`<bucket>.<endpoint host>/<key>`, AWS's virtual-hosted style).
   */
  forcePathStyle?: boolean;
  /** Prepended to every key in the bucket (so several stores can share one); listings strip it again. */
  keyPrefix?: string;
  /** Each request, body included, is aborted after this long (default 30 s). */
  requestTimeoutMs?: number;
  /** The signing time (default the system clock; S3 refuses requests more than 15 minutes off). */
  clock?: Clock;
  /** The fetch to send requests with (default the global one), e.g. one bound to a proxy dispatcher. */
  fetch?: typeof globalThis.fetch;
}

/** An S3 request failed: an error answer (`status`, S3's error `s3Code`), a timeout or a network error. */
export class S3RequestError extends StratusError {
  readonly operation: string;
  /** The HTTP status, undefined when no answer came. */
  readonly status: number | undefined;
  /** S3's error code (NoSuchBucket, AccessDenied, SlowDown...), 'Timeout' or 'NetworkError'. */
  readonly s3Code: string;
  readonly requestId: string | undefined;
  constructor(
    operation: string,
    details: { status?: number; s3Code: string; message: string; requestId?: string | undefined },
    options?: { cause?: unknown },
  ) {
    super(
      'ERR_STRATUS_S3_REQUEST',
      `S3 ${operation} failed${details.status === undefined ? '' : ` with ${details.status}`}: ` +
        `${details.s3Code}: ${details.message}`,
      options,
    );
    this.operation = operation;
    this.status = details.status;
    this.s3Code = details.s3Code;
    this.requestId = details.requestId;
  }
}

/** DeleteObjects takes at most this many keys per request. */
const MAX_DELETE_BATCH = 1000;

/**
 * Blobs as objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2...), spoken to with `fetch` and our
 * own SigV4 signing: no AWS SDK. Payloads are signed (x-amz-content-sha256 is the body's hash); deletes go in
 * batches of 1000 (DeleteObjects); listings use ListObjectsV2, one request per page, and the cursor is the page's
 * last object key, sent back as start-after (positional, so deleting listed blobs between pages is safe).
 * `createdAt` is the object's Last-Modified: the server's clock, to the second. The store owns no connection
 * beyond its requests: `close` aborts those in flight. Failed requests are not retried here.
 *
 * Permissions: s3:PutObject, s3:GetObject, s3:DeleteObject and s3:ListBucket. Without ListBucket, AWS answers a
 * GET of a missing key with 403 AccessDenied instead of 404, and `get` throws instead of returning undefined.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  readonly bucket: string;
  readonly keyPrefix: string;
  readonly #origin: string;
  readonly #host: string;
  /** Path of the bucket resource ('/bucket' path-style, '' virtual-hosted); objects are below it. */
  readonly #bucketPath: string;
  readonly #region: string;
  readonly #credentials: AwsCredentials;
  readonly #timeoutMs: number;
  readonly #clock: Clock;
  readonly #fetch: typeof globalThis.fetch;
  readonly #closing = new AbortController();

  constructor(options: S3BlobStoreOptions) {
    assertObject('options', options as unknown);
    const {
      endpoint,
      bucket,
      region,
      accessKeyId,
      secretAccessKey,
      sessionToken,
      forcePathStyle = true,
      keyPrefix = '',
      requestTimeoutMs = 30_000,
      clock = systemClock,
      fetch = globalThis.fetch,
    } = options;
    const base = parseEndpoint(endpoint);
    if (typeof bucket !== 'string' || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw new InvalidOptionsError('bucket', 'expected an S3 bucket name (3-63 of a-z, 0-9, ".", "-")');
    }
    for (const [option, value] of Object.entries({ region, accessKeyId, secretAccessKey })) {
      if (typeof value !== 'string' || value.length === 0) {
        throw new InvalidOptionsError(option, 'expected a non-empty string');
      }
    }
    if (sessionToken !== undefined && (typeof sessionToken !== 'string' || sessionToken.length === 0)) {
      throw new InvalidOptionsError('sessionToken', 'expected a non-empty string');
    }
    if (typeof forcePathStyle !== 'boolean')
      throw new InvalidOptionsError('forcePathStyle', 'expected a boolean');
    try {
      assertBlobKeyPrefix(keyPrefix, 512);
    } catch (error) {
      throw new InvalidOptionsError('keyPrefix', (error as Error).message);
    }
    assertDuration('requestTimeoutMs', requestTimeoutMs, { allowZero: false });
    if (typeof fetch !== 'function') throw new InvalidOptionsError('fetch', 'expected a fetch function');

    this.bucket = bucket;
    this.keyPrefix = keyPrefix;
    this.#origin = forcePathStyle ? base.origin : `${base.protocol}//${bucket}.${base.host}`;
    this.#host = forcePathStyle ? base.host : `${bucket}.${base.host}`;
    this.#bucketPath = forcePathStyle ? `/${bucket}` : '';
    this.#region = region;
    this.#credentials = { accessKeyId, secretAccessKey, sessionToken };
    this.#timeoutMs = requestTimeoutMs;
    this.#clock = clock;
    this.#fetch = fetch;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    assertBlobKey(key);
    await this.#request(
      'PutObject',
      {
        method: 'PUT',
        path: this.#objectPath(key),
        headers: { 'content-type': 'application/octet-stream' },
        body,
      },
      (response) => expectOk('PutObject', response),
    );
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    assertBlobKey(key);
    return this.#request('GetObject', { method: 'GET', path: this.#objectPath(key) }, async (response) => {
      if (response.status === 404) {
        const error = await errorOf('GetObject', response);
        if (error.s3Code === 'NoSuchKey') return undefined;
        throw error;
      }
      if (!response.ok) throw await errorOf('GetObject', response);
      return new Uint8Array(await response.arrayBuffer());
    });
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) assertBlobKey(key);
    for (let i = 0; i < keys.length; i += MAX_DELETE_BATCH) {
      const objects = keys
        .slice(i, i + MAX_DELETE_BATCH)
        .map((key) => `<Object><Key>${xmlEscape(this.keyPrefix + key)}</Key></Object>`);
      const body = new TextEncoder().encode(
        '<?xml version="1.0" encoding="UTF-8"?>' +
          `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>${objects.join('')}</Delete>`,
      );
      await this.#request(
        'DeleteObjects',
        {
          method: 'POST',
          path: this.#bucketPath || '/',
          query: { delete: '' },
          // S3 requires an integrity header on DeleteObjects; Content-MD5 is the one every S3-compatible server takes.
          headers: {
            'content-md5': createHash('md5').update(body).digest('base64'),
            'content-type': 'application/xml',
          },
          body,
        },
        async (response) => {
          // Quiet mode lists only the keys that failed.
          const failed = xmlElements(await expectOk('DeleteObjects', response), 'Error')[0];
          if (failed === undefined) return;
          throw new S3RequestError('DeleteObjects', {
            status: response.status,
            s3Code: xmlValue(failed, 'Code') ?? 'Unknown',
            message: `could not delete "${xmlValue(failed, 'Key')}": ${xmlValue(failed, 'Message') ?? ''}`,
            requestId: response.headers.get('x-amz-request-id') ?? undefined,
          });
        },
      );
    }
  }

  async list(options: BlobListOptions): Promise<BlobPage> {
    const { prefix, olderThan, limit, cursor } = checkListOptions(options);
    const query: Record<string, string> = { 'list-type': '2', 'max-keys': String(limit) };
    if (this.keyPrefix + prefix !== '') query.prefix = this.keyPrefix + prefix;
    if (cursor !== undefined) query['start-after'] = cursor;
    const xml = await this.#request(
      'ListObjectsV2',
      { method: 'GET', path: this.#bucketPath || '/', query },
      (r) => expectOk('ListObjectsV2', r),
    );
    const blobs: BlobInfo[] = [];
    let last: string | undefined;
    for (const entry of xmlElements(xml, 'Contents')) {
      last = xmlValue(entry, 'Key') ?? '';
      const key = last.slice(this.keyPrefix.length);
      const createdAt = Date.parse(xmlValue(entry, 'LastModified') ?? '');
      const size = Number(xmlValue(entry, 'Size'));
      // Objects the store cannot have written (other writers sharing the bucket) are not its blobs.
      if (!isBlobKey(key) || !Number.isFinite(createdAt) || createdAt >= olderThan) continue;
      blobs.push({ key, createdAt, size });
    }
    return { blobs, cursor: xmlValue(xml, 'IsTruncated') === 'true' ? last : undefined };
  }

  async close(): Promise<void> {
    this.#closing.abort();
  }

  #objectPath(key: string): string {
    return `${this.#bucketPath}/${uriEncodePath(this.keyPrefix + key)}`;
  }

  /**
   * Signs and sends one request and reads its answer with `read`, both under the request timeout and the
   * store's close; an abort or a network failure becomes a typed error.
   */
  async #request<T>(
    operation: string,
    request: {
      method: string;
      path: string;
      query?: Record<string, string>;
      headers?: Record<string, string>;
      body?: Uint8Array;
    },
    read: (response: Response) => Promise<T>,
  ): Promise<T> {
    if (this.#closing.signal.aborted) throw new BlobStoreClosedError(this.kind);
    const signed = signRequest(
      {
        method: request.method,
        host: this.#host,
        path: request.path,
        query: request.query,
        headers: request.headers,
        payloadHash: sha256Hex(request.body ?? ''),
      },
      { credentials: this.#credentials, region: this.#region, now: this.#clock.now() },
    );
    const url = `${this.#origin}${request.path}${signed.query === '' ? '' : `?${signed.query}`}`;
    const signal = AbortSignal.any([this.#closing.signal, AbortSignal.timeout(this.#timeoutMs)]);
    try {
      const response = await this.#fetch(url, {
        method: request.method,
        headers: signed.headers,
        body: request.body,
        signal,
      });
      return await read(response);
    } catch (error) {
      if (error instanceof S3RequestError) throw error;
      if (this.#closing.signal.aborted) throw new BlobStoreClosedError(this.kind);
      const timedOut = (error as { name?: unknown } | null)?.name === 'TimeoutError';
      throw new S3RequestError(
        operation,
        {
          s3Code: timedOut ? 'Timeout' : 'NetworkError',
          message: timedOut
            ? `no answer within ${this.#timeoutMs} ms`
            : String((error as Error)?.message ?? error),
        },
        { cause: error },
      );
    }
  }
}

function parseEndpoint(endpoint: unknown): URL {
  let url: URL;
  try {
    url = new URL(String(endpoint));
  } catch {
    throw new InvalidOptionsError('endpoint', `expected an http(s) URL, got ${JSON.stringify(endpoint)}`);
  }
  if (typeof endpoint !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new InvalidOptionsError('endpoint', 'expected an http(s) URL');
  }
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new InvalidOptionsError('endpoint', 'expected a base URL without path, query or credentials');
  }
  return url;
}

/** The body of a 2xx answer as text; anything else becomes an S3RequestError. */
async function expectOk(operation: string, response: Response): Promise<string> {
  if (!response.ok) throw await errorOf(operation, response);
  return response.text();
}

async function errorOf(operation: string, response: Response): Promise<S3RequestError> {
  const xml = await response.text().catch(() => '');
  return new S3RequestError(operation, {
    status: response.status,
    s3Code: xmlValue(xml, 'Code') ?? `HTTP${response.status}`,
    message: xmlValue(xml, 'Message') ?? (response.statusText || 'no error document'),
    requestId: response.headers.get('x-amz-request-id') ?? xmlValue(xml, 'RequestId'),
  });
}

/** The decoded contents of each `<tag>...</tag>` (S3's answers are flat enough for this; no attributes used). */
function xmlElements(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1] as string);
}

function xmlValue(xml: string, tag: string): string | undefined {
  const inner = xmlElements(xml, tag)[0];
  return inner === undefined ? undefined : xmlDecode(inner);
}

function xmlDecode(text: string): string {
  return text.replace(/&(?:#x([0-9a-fA-F]+)|#(\d+)|(lt|gt|amp|quot|apos));/g, (_, hex, dec, name) => {
    if (hex !== undefined) return String.fromCodePoint(Number.parseInt(hex, 16));
    if (dec !== undefined) return String.fromCodePoint(Number.parseInt(dec, 10));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[name as 'lt'];
  });
}

function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
