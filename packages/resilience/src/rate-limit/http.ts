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
}

/** Anything headers can be set on: a node:http ServerResponse (Express, Fastify's reply.raw, ...). */
export interface HeaderSink {
  setHeader(name: string, value: string): unknown;
}

/** Whole seconds for a header, rounded up so a client never comes back early. */
function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

/** The policy name as a structured-field string: printable ASCII, quotes and backslashes escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '\\$&')}"`;
}

/**
 * The response header fields describing `result`, plus Retry-After (delay-seconds) when it was refused and
 * can succeed later. Fields whose value is not finite (a lease that never expires) are left out.
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
    headers['RateLimit-Policy'] =
      `${name};q=${result.limit}${windowMs === undefined ? '' : `;w=${Math.max(1, seconds(windowMs))}`}`;
    headers.RateLimit = `${name};r=${result.remaining}${reset === undefined ? '' : `;t=${reset}`}`;
  }
  if (!result.allowed && Number.isFinite(result.retryAfterMs)) {
    headers['Retry-After'] = String(Math.max(1, seconds(result.retryAfterMs)));
  }
  return headers;
}

/** Writes the fields of `result` onto a response (anything with setHeader) or into a plain headers object. */
export function setRateLimitHeaders(
  target: HeaderSink | Record<string, string>,
  result: RateLimitResult,
  options?: RateLimitHeaderOptions,
): void {
  const headers = rateLimitHeaders(result, options);
  if (typeof (target as HeaderSink).setHeader === 'function') {
    for (const name in headers) (target as HeaderSink).setHeader(name, headers[name]!);
  } else {
    Object.assign(target, headers);
  }
}

/**
 * Answers a refused request: 429 Too Many Requests with the rate-limit fields and Retry-After, so the
 * client knows the refusal is throttling and when to come back.
 */
export function sendTooManyRequests(
  response: ServerResponse,
  result: RateLimitResult,
  options?: RateLimitHeaderOptions & { body?: string },
): void {
  setRateLimitHeaders(response, result, options);
  const body = options?.body ?? 'Too Many Requests\n';
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
  /** The body of the 429 answer. */
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
    const result = await limiter.acquire(key(request), cost === undefined ? 1 : cost(request));
    if (!result.allowed) {
      sendTooManyRequests(response, result, { ...headers, body: options.body });
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
