/**
 * AWS Signature Version 4 for S3 requests signed in the Authorization header, with node:crypto only
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html). S3 flavour: the path is
 * URI-encoded once (not twice as for other services) and the payload hash is always sent as
 * x-amz-content-sha256.
 */
import { createHash, createHmac } from 'node:crypto';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Temporary credentials (STS) come with a session token, sent as x-amz-security-token. */
  readonly sessionToken?: string | undefined;
}

export interface SigV4Request {
  readonly method: string;
  /** The Host header as it will be sent: with the port when it is not the scheme's default. */
  readonly host: string;
  /** The path as it will be sent, already URI-encoded (see `uriEncodePath`). */
  readonly path: string;
  /** Query parameters, unencoded; '' for a parameter without a value (`?delete`). */
  readonly query?: Readonly<Record<string, string>> | undefined;
  /** Further headers to send and sign (Content-MD5, Range...). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Hex SHA-256 of the body (`sha256Hex`), or 'UNSIGNED-PAYLOAD'. */
  readonly payloadHash: string;
}

export interface SigV4Context {
  readonly credentials: AwsCredentials;
  readonly region: string;
  /** Default 's3'. */
  readonly service?: string | undefined;
  /** The signing time, epoch ms. */
  readonly now: number;
}

export interface SignedRequest {
  /** Headers to send, Authorization included; Host is left to the HTTP client, which derives it from the URL. */
  readonly headers: Record<string, string>;
  /** The canonical query string, to be sent as the URL's query (the signature covers exactly this). */
  readonly query: string;
  readonly canonicalRequest: string;
  readonly stringToSign: string;
  readonly signature: string;
}

export const EMPTY_PAYLOAD_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export function signRequest(request: SigV4Request, context: SigV4Context): SignedRequest {
  const { credentials, region, service = 's3', now } = context;
  const amzDate = new Date(now)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const scope = `${date}/${region}/${service}/aws4_request`;

  const sent: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) sent[name.toLowerCase()] = value;
  sent['x-amz-content-sha256'] = request.payloadHash;
  sent['x-amz-date'] = amzDate;
  if (credentials.sessionToken !== undefined) sent['x-amz-security-token'] = credentials.sessionToken;

  const signed: Record<string, string> = { ...sent, host: request.host };
  const names = Object.keys(signed).sort();
  const signedHeaders = names.join(';');
  const canonicalHeaders = names.map((name) => `${name}:${canonicalHeaderValue(signed[name] as string)}\n`);
  const query = canonicalQuery(request.query ?? {});
  const canonicalRequest = [
    request.method,
    request.path,
    query,
    canonicalHeaders.join(''),
    signedHeaders,
    request.payloadHash,
  ].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, date, region, service))
    .update(stringToSign)
    .digest('hex');
  sent.authorization =
    `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return { headers: sent, query, canonicalRequest, stringToSign, signature };
}

/** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
export function signingKey(secretAccessKey: string, date: string, region: string, service: string): Buffer {
  let key: Buffer | string = `AWS4${secretAccessKey}`;
  for (const part of [date, region, service, 'aws4_request'])
    key = createHmac('sha256', key).update(part).digest();
  return key as Buffer;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** RFC 3986 percent-encoding as SigV4 wants it: everything but A-Z a-z 0-9 - . _ ~ becomes %XX (upper case). */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${(c.codePointAt(0) as number).toString(16).toUpperCase()}`,
  );
}

/** Each '/'-separated segment encoded, the slashes kept. */
export function uriEncodePath(path: string): string {
  return path.split('/').map(uriEncode).join('/');
}

export function canonicalQuery(query: Readonly<Record<string, string>>): string {
  return Object.entries(query)
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/ +/g, ' ');
}
