import type { IncomingMessage, ServerResponse } from 'node:http';
import { assertFunction, assertObject, InvalidOptionsError } from '@stratus/core';
import type { RateLimiter, RateLimitResult } from './types.js';

/**
 * Which fields to write: 'legacy' RateLimit-Limit / -Remaining / -Reset (the de-facto convention of earlier
 * IETF drafts and most APIs), 'draft' the combined RateLimit and RateLimit-Policy fields of
 * draft-ietf-httpapi-ratelimit-headers (08 and later), or 'both' (default).
 */
export type RateLimitHeaderStyle = 'legacy' | 'draft' | 'both';

export interface RateLimitHeaderOptions {
  /** The quota policy's name in RateLimit / RateLimit-Policy; default 'default'. */
  policy?: string;
  /** The quota's window for RateLimit-Policy `w`; omitted when undefined (e.g. concurrency limits). */
  windowMs?: number;
  style?: RateLimitHeaderStyle;
  /**
   * The permits the request asked for. A refusal of more than the limit can never succeed (its `retryAfterMs` is
   * Infinity); with the cost known it still gets a Retry-After: when the key's quota is full again.
   */
  cost?: number;
}

/** Anything headers can be set on: a node:http ServerResponse (Express, Fastify's reply.raw, ...). */
export interface HeaderSink {
  setHeader(name: string, value: string): unknown;
  /** What is set already (a ServerResponse has it): fields of other limiters are combined rather than replaced. */
  getHeader?(name: string): unknown;
}

const LEGACY_FIELDS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;
const LIST_FIELDS = ['RateLimit-Policy', 'RateLimit'] as const;
/** Every field these functions write, in the order they write them. */
const FIELDS = [...LEGACY_FIELDS, ...LIST_FIELDS, 'Retry-After'] as const;

/** Whole seconds for a header, rounded up so a client never comes back early. */
function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** The policy name as a structured-field string: printable ASCII, quotes and backslashes escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '\\$&')}"`;
}

/**
 * The quota and window RateLimit-Policy advertises. The draft's `w` is whole seconds ("sub-second precision is not
 * supported"), and rounding a 100 ms window up to w=1 would tell clients a tenth of what they may do. So the quota
 * is scaled to the shortest whole-second window that covers the real one, rounded down: 5 per 100 ms is advertised
 * as q=50;w=1, 3 per 1.5 s as q=4;w=2. Clients are told the rate allowed, never more; a window of whole seconds is
 * advertised as it is.
 */
function advertisedPolicy(limit: number, windowMs: number): { q: number; w: number } {
  const w = Math.max(1, seconds(windowMs));
  if (w * 1000 === windowMs) return { q: limit, w };
  // The epsilon keeps an exact product (5 * 1000 / 100) from flooring one short through rounding.
  return { q: Math.floor((limit * w * 1000) / windowMs + 1e-9), w };
}

/**
 * When a refusal that can never succeed (a cost above the limit) should be retried at the earliest: once the key's
 * quota is full again, a smaller request passes. Its window when the quota is full already, else a second.
 */
function neverRetryMs(result: RateLimitResult, windowMs: number | undefined): number {
  if (Number.isFinite(result.resetMs) && result.resetMs > 0) return result.resetMs;
  return windowMs ?? 1000;
}

/** Whether `cost` is more than the limit, so that the request can never be allowed. */
export function exceedsLimit(result: RateLimitResult, cost: number | undefined): boolean {
  return !result.allowed && cost !== undefined && cost > result.limit;
}

/**
 * The response header fields describing `result`, plus Retry-After (delay-seconds) when it was refused and
 * can succeed later, or when its `cost` is above the limit (see RateLimitHeaderOptions.cost). Fields whose value is
 * not finite (a lease that never expires) are left out.
 */
export function rateLimitHeaders(
  result: RateLimitResult,
  options: RateLimitHeaderOptions = {},
): Record<string, string> {
  const { style = 'both', policy = 'default', windowMs } = options;
  const headers: Record<string, string> = {};
  const reset = Number.isFinite(result.resetMs) ? seconds(result.resetMs) : undefined;
  if (style !== 'draft') {
    headers['RateLimit-Limit'] = String(result.limit);
    headers['RateLimit-Remaining'] = String(result.remaining);
    if (reset !== undefined) headers['RateLimit-Reset'] = String(reset);
  }
  if (style !== 'legacy') {
    const name = sfString(policy);
    let quota = `q=${result.limit}`;
    if (windowMs !== undefined) {
      const { q, w } = advertisedPolicy(result.limit, windowMs);
      quota = `q=${q};w=${w}`;
    }
    headers['RateLimit-Policy'] = `${name};${quota}`;
    headers.RateLimit = `${name};r=${result.remaining}${reset === undefined ? '' : `;t=${reset}`}`;
  }
  const retryAfterMs = exceedsLimit(result, options.cost)
    ? neverRetryMs(result, windowMs)
    : result.retryAfterMs;
  if (!result.allowed && Number.isFinite(retryAfterMs)) {
    headers['Retry-After'] = String(Math.max(1, seconds(retryAfterMs)));
  }
  return headers;
}

/** The items of a structured-field list, split at the commas outside quoted strings. */
function listItems(value: string): string[] {
  const items: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const char = value[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      items.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(value.slice(start).trim());
  return items.filter((item) => item !== '');
}

/** A list of policies and service limits with `added`'s items: each replaces the item of its policy, or joins. */
function combineLists(existing: string, added: string): string {
  const items = new Map<string, string>();
  for (const item of [...listItems(existing), ...listItems(added)])
    items.set(item.split(';')[0]!.trim(), item);
  return [...items.values()].join(', ');
}

/** The legacy fields' remaining and reset, to pick the most restrictive (no reset: the quota never comes back). */
function restriction(
  fields: Readonly<Record<string, string | undefined>>,
): [remaining: number, reset: number] {
  const reset = fields['RateLimit-Reset'];
  return [Number(fields['RateLimit-Remaining']), reset === undefined ? Infinity : Number(reset)];
}

/**
 * The fields of two limiters that both apply to one response, as one set: the legacy RateLimit-Limit / -Remaining /
 * -Reset of the more restrictive (fewer permits left; on a tie, the later reset), RateLimit-Policy and RateLimit as
 * lists with an item per policy (a policy written again replaces its item), and the later Retry-After, since the
 * request passes only when every limiter lets it.
 */
export function combineRateLimitHeaders(
  existing: Readonly<Record<string, string | undefined>>,
  added: Readonly<Record<string, string>>,
): Record<string, string> {
  const combined: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = existing[name];
    if (value !== undefined) combined[name] = value;
  }
  if (added['RateLimit-Remaining'] !== undefined) {
    const [hasLeft, hasReset] = restriction(existing);
    const [addedLeft, addedReset] = restriction(added);
    const tighter =
      existing['RateLimit-Remaining'] === undefined ||
      addedLeft < hasLeft ||
      (addedLeft === hasLeft && addedReset > hasReset);
    if (tighter) {
      for (const name of LEGACY_FIELDS) delete combined[name];
      for (const name of LEGACY_FIELDS) if (added[name] !== undefined) combined[name] = added[name];
    }
  }
  for (const name of LIST_FIELDS) {
    const value = added[name];
    if (value !== undefined) combined[name] = combineLists(existing[name] ?? '', value);
  }
  const retryAfter = added['Retry-After'];
  if (retryAfter !== undefined && !(Number(existing['Retry-After']) >= Number(retryAfter)))
    combined['Retry-After'] = retryAfter;
  return combined;
}

/** A header's value as text (node:http keeps numbers and arrays as given). */
function text(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/**
 * Writes the fields of `result` onto a response (anything with setHeader) or into a plain headers object. Fields
 * another limiter set on it already are combined with these (combineRateLimitHeaders), so each limiter of a request
 * can write its own.
 */
export function setRateLimitHeaders(
  target: HeaderSink | Record<string, string>,
  result: RateLimitResult,
  options?: RateLimitHeaderOptions,
): void {
  const added = rateLimitHeaders(result, options);
  if (typeof (target as HeaderSink).setHeader === 'function') {
    const sink = target as HeaderSink;
    const existing: Record<string, string | undefined> = {};
    if (typeof sink.getHeader === 'function')
      for (const name of FIELDS) existing[name] = text(sink.getHeader(name));
    const headers = combineRateLimitHeaders(existing, added);
    for (const name in headers) if (headers[name] !== existing[name]) sink.setHeader(name, headers[name]!);
    return;
  }
  const plain = target as Record<string, string>;
  // Plain objects may spell a field in any case: each is read in any and written back in one.
  const existing: Record<string, string | undefined> = {};
  for (const key of Object.keys(plain)) {
    const name = FIELDS.find((field) => field.toLowerCase() === key.toLowerCase());
    if (name === undefined) continue;
    existing[name] = plain[key];
    delete plain[key];
  }
  Object.assign(plain, combineRateLimitHeaders(existing, added));
}

/**
 * Answers a refused request: 429 Too Many Requests with the rate-limit fields and Retry-After, so the
 * client knows the refusal is throttling and when to come back. A request whose `cost` is above the limit gets a
 * body saying that it can never be allowed (whatever `body` says), and a Retry-After all the same.
 */
export function sendTooManyRequests(
  response: ServerResponse,
  result: RateLimitResult,
  options?: RateLimitHeaderOptions & { body?: string },
): void {
  setRateLimitHeaders(response, result, options);
  const body = exceedsLimit(result, options?.cost)
    ? `Too Many Requests: this request takes ${options?.cost} permits, more than the limit of ${result.limit}; ` +
      'it can never be allowed.\n'
    : (options?.body ?? 'Too Many Requests\n');
  response.statusCode = 429;
  response.setHeader('Content-Type', 'text/plain; charset=utf-8');
  response.setHeader('Content-Length', Buffer.byteLength(body));
  response.end(body);
}

export interface HttpRateLimitOptions<Request extends IncomingMessage = IncomingMessage> {
  limiter: RateLimiter;
  /** The key a request is charged to (client IP, API key, tenant). */
  key: (request: Request) => string;
  /** Permits a request takes; default 1. */
  cost?: (request: Request) => number;
  /** Header fields to write; the policy name defaults to the limiter's name, the window to its windowMs. */
  headers?: RateLimitHeaderOptions;
  /** The body of the 429 answer (a request costing more than the limit gets one saying so). */
  body?: string;
}

/**
 * A framework-agnostic guard for node:http-style servers: takes permits for the request, sets the rate-limit
 * fields on the response, and answers 429 itself when refused. Resolves true when the request may proceed.
 * A concurrency lease is held until the response closes. Store errors reject (fail closed; catch to fail
 * open). With Express: `app.use((req, res, next) => guard(req, res).then((ok) => ok && next(), next))`.
 */
export function httpRateLimit<Request extends IncomingMessage = IncomingMessage>(
  options: HttpRateLimitOptions<Request>,
): (request: Request, response: ServerResponse) => Promise<boolean> {
  assertObject('options', options as unknown);
  const { limiter, key, cost } = options;
  if (typeof (limiter as { acquire?: unknown })?.acquire !== 'function') {
    throw new InvalidOptionsError('limiter', 'expected a rate limiter');
  }
  assertFunction('key', key);
  if (cost !== undefined) assertFunction('cost', cost);
  const headers: RateLimitHeaderOptions = {
    policy: limiter.name,
    windowMs: limiter.windowMs,
    ...options.headers,
  };
  return async (request, response) => {
    const permits = cost === undefined ? 1 : cost(request);
    const result = await limiter.acquire(key(request), permits);
    if (!result.allowed) {
      sendTooManyRequests(response, result, { ...headers, cost: permits, body: options.body });
      return false;
    }
    setRateLimitHeaders(response, result, headers);
    const lease = result.lease;
    if (lease !== undefined) {
      // A failed release is harmless here: the lease expires on its own.
      response.once('close', () => lease.release().catch(() => {}));
    }
    return true;
  };
}
