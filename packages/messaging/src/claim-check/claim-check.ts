/**
 * The Claim-Check pattern at the codec level, independent of any queue backend: a body larger than the
 * threshold is stored in a BlobStore and the message carries only a reference (in one header; the body becomes
 * empty), the receiver gets the payload back transparently, and the blob is deleted after completion or, when
 * the message was never consumed, by an age-based sweep.
 *
 * Client wiring: send = encode → `offload` (when it returns something, send its body and add its headers);
 * receive = `restore(headers, body)` → decode; complete (or dead-letter purge) = `release(headers)`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import {
  assertDuration,
  assertInteger,
  assertNumber,
  assertObject,
  type Clock,
  InvalidOptionsError,
  systemClock,
  uuidv7,
} from '@stratus/core';
import { assertBlobKey, type BlobStore } from './blob-store.js';
import { ClaimCheckCorruptError, ClaimCheckMissingError, ClaimCheckSignatureError } from './errors.js';

/** The header that carries the reference; a message without it travels inline. */
export const CLAIM_CHECK_HEADER = 'stratus-claim-check';

/** An HMAC key: text (UTF-8) or bytes, at least 16 bytes long. */
export type ClaimCheckSigningKey = string | Uint8Array;

export interface ClaimCheckOptions {
  store: BlobStore;
  /** Bodies of more than this many bytes are offloaded; bodies at or below it travel inline, unchanged. */
  thresholdBytes: number;
  /** Blob keys are `<keyPrefix><UUIDv7>`, and `sweep` looks only under this prefix (default 'claim-check/'). */
  keyPrefix?: string;
  /**
   * Sign references (HMAC-SHA256) so a consumer accepts only references made by a holder of the key: whoever can
   * put messages on the queue cannot point a consumer at other blobs, nor alter size or digest. The first key
   * signs; every key verifies (list the old key second while rotating). With keys set, unsigned references are
   * rejected.
   */
  signingKey?: ClaimCheckSigningKey | readonly ClaimCheckSigningKey[];
  /** Keep payloads on `release` (archive mode); only `sweep` deletes them then. Default false. */
  archive?: boolean;
  /** Time for the UUIDv7 of new keys (default the system clock). */
  clock?: Clock;
}

export interface ClaimCheckReference {
  readonly key: string;
  /** Payload size in bytes. */
  readonly size: number;
  /** SHA-256 of the payload, base64url; the restored bytes must match it. */
  readonly sha256: string;
}

export interface OffloadedBody {
  /** What the message carries instead of the payload: nothing. */
  readonly body: Uint8Array;
  /** Add these to the message's headers. */
  readonly headers: Record<string, string>;
  readonly reference: ClaimCheckReference;
}

export interface SweepOptions {
  /** Blobs created longer ago than this are deleted: choose more than any message can stay queued or dead-lettered. */
  readonly olderThanMs: number;
  /** The current time, epoch ms. */
  readonly now: number;
}

const DEFAULT_KEY_PREFIX = 'claim-check/';
const MIN_SIGNING_KEY_BYTES = 16;
const SWEEP_PAGE = 1000;
/** `v1;key=<key>;size=<bytes>;sha256=<base64url>` then, when signed, `;sig=<base64url HMAC of what precedes>`. */
const REFERENCE_PATTERN =
  /^(v1;key=([A-Za-z0-9._/-]+);size=(\d{1,15});sha256=([A-Za-z0-9_-]{43}))(?:;sig=([A-Za-z0-9_-]{43}))?$/;

export class ClaimCheck {
  readonly store: BlobStore;
  readonly thresholdBytes: number;
  readonly keyPrefix: string;
  readonly archive: boolean;
  readonly #keys: Buffer[];
  readonly #clock: Clock;

  constructor(options: ClaimCheckOptions) {
    assertObject('options', options as unknown);
    const {
      store,
      thresholdBytes,
      keyPrefix = DEFAULT_KEY_PREFIX,
      signingKey,
      archive = false,
      clock,
    } = options;
    if (typeof (store as { get?: unknown } | undefined)?.get !== 'function') {
      throw new InvalidOptionsError('store', 'expected a BlobStore');
    }
    assertInteger('thresholdBytes', thresholdBytes, 0);
    try {
      assertBlobKey(`${keyPrefix}${uuidv7(0)}`);
    } catch (error) {
      throw new InvalidOptionsError('keyPrefix', (error as Error).message);
    }
    if (typeof archive !== 'boolean') throw new InvalidOptionsError('archive', 'expected a boolean');
    this.store = store;
    this.thresholdBytes = thresholdBytes;
    this.keyPrefix = keyPrefix;
    this.archive = archive;
    this.#keys = signingKeys(signingKey);
    this.#clock = clock ?? systemClock;
  }

  /** Stores a body above the threshold and returns what to send instead; undefined when it travels inline. */
  async offload(body: Uint8Array): Promise<OffloadedBody | undefined> {
    if (!(body instanceof Uint8Array)) throw new InvalidOptionsError('body', 'expected a Uint8Array');
    if (body.byteLength <= this.thresholdBytes) return undefined;
    const reference: ClaimCheckReference = {
      key: `${this.keyPrefix}${uuidv7(this.#clock.now())}`,
      size: body.byteLength,
      sha256: digest(body),
    };
    await this.store.put(reference.key, body);
    const unsigned = `v1;key=${reference.key};size=${reference.size};sha256=${reference.sha256}`;
    const [signing] = this.#keys;
    const token = signing === undefined ? unsigned : `${unsigned};sig=${hmac(signing, unsigned)}`;
    return { body: new Uint8Array(0), headers: { [CLAIM_CHECK_HEADER]: token }, reference };
  }

  /**
   * The verified reference of a message, or undefined when it carries none. Throws ClaimCheckCorruptError for a
   * malformed one and ClaimCheckSignatureError for a forged, altered or (with signing keys) unsigned one.
   */
  reference(headers: Readonly<Record<string, string>> | undefined): ClaimCheckReference | undefined {
    const token = headers?.[CLAIM_CHECK_HEADER];
    if (token === undefined) return undefined;
    const match = REFERENCE_PATTERN.exec(token);
    if (match === null) throw new ClaimCheckCorruptError(`malformed reference ${JSON.stringify(token)}`);
    const [, unsigned, key, size, sha256, signature] = match as unknown as [
      string,
      string,
      string,
      string,
      string,
      string?,
    ];
    if (this.#keys.length > 0) {
      if (signature === undefined) throw new ClaimCheckSignatureError('the reference is not signed');
      const given = Buffer.from(signature, 'base64url');
      if (!this.#keys.some((k) => timingSafeEqual(Buffer.from(hmac(k, unsigned), 'base64url'), given))) {
        throw new ClaimCheckSignatureError('the signature matches none of the signing keys');
      }
    }
    try {
      assertBlobKey(key);
    } catch (error) {
      throw new ClaimCheckCorruptError((error as Error).message);
    }
    return { key, size: Number(size), sha256 };
  }

  /**
   * The payload of a received message: the body itself when it carries no reference, else the stored blob,
   * checked against the reference's size and digest. ClaimCheckMissingError when the blob is gone.
   */
  async restore(
    headers: Readonly<Record<string, string>> | undefined,
    body: Uint8Array,
  ): Promise<Uint8Array> {
    const reference = this.reference(headers);
    if (reference === undefined) return body;
    const payload = await this.store.get(reference.key);
    if (payload === undefined) throw new ClaimCheckMissingError(reference.key);
    if (payload.byteLength !== reference.size || digest(payload) !== reference.sha256) {
      throw new ClaimCheckCorruptError(`the blob "${reference.key}" does not match its reference`);
    }
    return payload;
  }

  /**
   * After the message completed: deletes its payload (unless in archive mode). True when a blob was deleted.
   * A forged reference is refused (ClaimCheckSignatureError), so it cannot delete other blobs either.
   */
  async release(headers: Readonly<Record<string, string>> | undefined): Promise<boolean> {
    const reference = this.reference(headers);
    if (reference === undefined || this.archive) return false;
    await this.store.delete([reference.key]);
    return true;
  }

  /**
   * Deletes the blobs under the key prefix created more than `olderThanMs` before `now`: payloads of messages
   * never consumed (sent after a failed send, dropped as duplicates, purged). Returns how many it deleted.
   */
  async sweep(options: SweepOptions): Promise<{ deleted: number }> {
    assertObject('options', options as unknown);
    assertDuration('olderThanMs', options.olderThanMs);
    assertNumber('now', options.now, 0);
    const olderThan = options.now - options.olderThanMs;
    let deleted = 0;
    let cursor: string | undefined;
    do {
      const page = await this.store.list({ prefix: this.keyPrefix, olderThan, limit: SWEEP_PAGE, cursor });
      await this.store.delete(page.blobs.map((blob) => blob.key));
      deleted += page.blobs.length;
      cursor = page.cursor;
    } while (cursor !== undefined);
    return { deleted };
  }
}

export function createClaimCheck(options: ClaimCheckOptions): ClaimCheck {
  return new ClaimCheck(options);
}

function signingKeys(option: ClaimCheckOptions['signingKey']): Buffer[] {
  if (option === undefined) return [];
  const list: readonly unknown[] =
    typeof option === 'string' || option instanceof Uint8Array ? [option] : option;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidOptionsError(
      'signingKey',
      'expected a key (string or bytes) or a non-empty list of keys',
    );
  }
  return list.map((key, i) => {
    const bytes =
      typeof key === 'string'
        ? Buffer.from(key, 'utf8')
        : key instanceof Uint8Array
          ? Buffer.from(key)
          : undefined;
    if (bytes === undefined || bytes.byteLength < MIN_SIGNING_KEY_BYTES) {
      throw new InvalidOptionsError(
        list.length === 1 ? 'signingKey' : `signingKey[${i}]`,
        `expected a string or bytes of at least ${MIN_SIGNING_KEY_BYTES} bytes`,
      );
    }
    return bytes;
  });
}

function digest(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('base64url');
}

function hmac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url');
}
