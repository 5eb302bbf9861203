import type { IncomingMessage } from 'node:http';

/**
 * What routing reads of a request, parsed once and only when a rule asks: the normalised path, host, headers,
 * query, cookies and client address.
 */
export class RequestView {
  readonly method: string;
  #host: string | undefined;
  #query: URLSearchParams | undefined;
  #cookies: Map<string, string> | undefined;

  private constructor(
    readonly request: IncomingMessage,
    /** The path with dot segments resolved and repeated slashes merged: what routes match and upstreams get. */
    readonly path: string,
    /** The query string with its `?`, or ''. */
    readonly search: string,
  ) {
    this.method = request.method ?? 'GET';
  }

  /** The view of a request, or undefined when its target is not a path a gateway should route (answer 400). */
  static of(request: IncomingMessage): RequestView | undefined {
    const target = request.url ?? '';
    const queryAt = target.indexOf('?');
    const raw = queryAt === -1 ? target : target.slice(0, queryAt);
    const path = normalizePath(raw);
    if (path === undefined) return undefined;
    return new RequestView(request, path, queryAt === -1 ? '' : target.slice(queryAt));
  }

  /** The Host header in lower case, without its port. */
  get host(): string {
    if (this.#host === undefined) {
      const host = (this.request.headers.host ?? '').toLowerCase();
      const close = host.startsWith('[') ? host.indexOf(']') + 1 : 0;
      const colon = host.indexOf(':', close);
      this.#host = colon === -1 ? host : host.slice(0, colon);
    }
    return this.#host;
  }

  /** A header's value; repeated headers joined with ", " (cookies with "; "). */
  header(name: string): string | undefined {
    const value = this.request.headers[name];
    return Array.isArray(value) ? value.join(name === 'cookie' ? '; ' : ', ') : value;
  }

  query(): URLSearchParams {
    this.#query ??= new URLSearchParams(this.search);
    return this.#query;
  }

  cookies(): Map<string, string> {
    this.#cookies ??= parseCookies(this.header('cookie'));
    return this.#cookies;
  }

  /** The client's address as the socket sees it (IPv4-mapped IPv6 addresses as plain IPv4). */
  get ip(): string {
    const address = this.request.socket.remoteAddress ?? '';
    return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
  }
}

/** Percent-encodings a path may not hide: '/', '\' and NUL, which upstreams decode into other paths. */
const HIDDEN_SEPARATOR = /%(2f|5c|00)|\\/i;

/**
 * Resolves '.' and '..' segments (also percent-encoded ones) and merges repeated slashes, as RFC 3986 §5.2.4
 * describes, so that a prefix rule sees the path the upstream will act on: '/public/../admin' is '/admin'.
 * Undefined for a target that is not an origin-form path or that hides a separator in an encoding.
 */
export function normalizePath(raw: string): string | undefined {
  if (raw.charCodeAt(0) !== 47 || HIDDEN_SEPARATOR.test(raw)) return undefined;
  if (!/\/\/|\/\.|%2e/i.test(raw)) return raw;
  const out: string[] = [];
  const parts = raw.split('/');
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i] as string;
    const plain = part.replace(/%2e/gi, '.');
    const last = i === parts.length - 1;
    if (plain === '.' || plain === '..') {
      if (plain === '..') out.pop();
      if (last) out.push('');
    } else if (part !== '' || last) out.push(part);
  }
  return `/${out.join('/')}`;
}

function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (header === undefined) return cookies;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq === -1) continue;
    const name = pair.slice(0, eq).trim();
    if (name !== '' && !cookies.has(name)) cookies.set(name, pair.slice(eq + 1).trim());
  }
  return cookies;
}
