import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { RequestView } from './request-view.js';

/** Hop-by-hop headers (RFC 9110 §7.6.1): about one connection, never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers the gateway sets itself on the way up. */
const REPLACED = new Set([
  'host',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'x-request-id',
]);

/** Names a Connection header lists: hop-by-hop too. */
function listedIn(connection: string | undefined): Set<string> | undefined {
  if (connection === undefined || connection === '') return undefined;
  return new Set(connection.split(',').map((name) => name.trim().toLowerCase()));
}

/**
 * The headers an upstream gets, as names and values in turn, without Host (set per target): the client's end-to-end
 * headers but those the gateway `owned` (set from what it verified), then X-Forwarded-For (the client's address
 * appended to any chain it sent), -Proto, -Host, the request id, and the `added` ones.
 */
export function upstreamHeaders(
  view: RequestView,
  requestId: string,
  owned?: ReadonlySet<string>,
  added?: readonly string[],
): string[] {
  const request = view.request;
  const raw = request.rawHeaders;
  const listed = listedIn(view.header('connection'));
  const out: string[] = [];
  let forwardedFor: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || listed?.has(lower) || owned?.has(lower)) continue;
    if (REPLACED.has(lower)) {
      if (lower === 'x-forwarded-for')
        forwardedFor = forwardedFor ? `${forwardedFor}, ${raw[i + 1]}` : raw[i + 1];
      continue;
    }
    out.push(name, raw[i + 1] as string);
  }
  const ip = view.ip;
  out.push(
    'x-forwarded-for',
    forwardedFor ? `${forwardedFor}, ${ip}` : ip,
    'x-forwarded-proto',
    isEncrypted(request) ? 'https' : 'http',
    'x-forwarded-host',
    request.headers.host ?? '',
    'x-request-id',
    requestId,
  );
  if (added !== undefined) out.push(...added);
  return out;
}

function isEncrypted(request: IncomingMessage): boolean {
  return (request.socket as TLSSocket).encrypted === true;
}

/**
 * The upstream's response headers for the client, as names and values in turn, hop-by-hop ones left out, and
 * whether they give the body's length.
 */
export function clientHeaders(
  rawHeaders: readonly Buffer[],
  requestId: string,
): { headers: string[]; sized: boolean } {
  let headers: string[] = [];
  let listed: Set<string> | undefined;
  let sized = false;
  let hasRequestId = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as Buffer).toString('latin1');
    const value = (rawHeaders[i + 1] as Buffer).toString('latin1');
    const lower = name.toLowerCase();
    if (lower === 'connection') listed = listedIn(value);
    if (HOP_BY_HOP.has(lower)) continue;
    if (lower === 'content-length') sized = true;
    else if (lower === 'x-request-id') hasRequestId = true;
    headers.push(name, value);
  }
  // Rare: a Connection header that names other headers, which are hop-by-hop too.
  if (listed !== undefined)
    headers = headers.filter((_, i) => !listed.has((headers[i - (i % 2)] as string).toLowerCase()));
  if (!hasRequestId) headers.push('x-request-id', requestId);
  return { headers, sized };
}

/** Whether a request carries a body (RFC 9112 §6.3): a Transfer-Encoding, or a Content-Length above 0. */
export function hasBody(request: IncomingMessage): boolean {
  const headers = request.headers;
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

const REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

/** The client's request id when it is a sane one, else undefined (the gateway makes one). */
export function requestIdOf(request: IncomingMessage): string | undefined {
  const id = request.headers['x-request-id'];
  return typeof id === 'string' && REQUEST_ID.test(id) ? id : undefined;
}
