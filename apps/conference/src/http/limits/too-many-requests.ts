/** The refusal of an abuse limit: 429 Too Many Requests with Retry-After and the RateLimit fields. */
import { type RateLimitResult, rateLimitHeaders } from '@stratus/resilience';

export class TooManyRequestsError extends Error {
  readonly statusCode = 429;
  /** Retry-After and the RateLimit fields of the limit that refused. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, headers: Readonly<Record<string, string>>) {
    super(message);
    this.name = 'TooManyRequestsError';
    this.headers = headers;
  }

  /**
   * The refusal of `result` (from the limit named `policy` over `windowMs`, asked for `cost` permits), its message
   * ending in when to retry (a cost above the limit: once the client's quota is whole again, as Retry-After says).
   */
  static of(
    message: string,
    result: RateLimitResult,
    policy: string,
    windowMs: number,
    cost = 1,
  ): TooManyRequestsError {
    const headers = rateLimitHeaders(result, { policy, windowMs, cost });
    const retryAfter = Number(headers['Retry-After'] ?? 0) * 1000;
    return new TooManyRequestsError(`${message} Try again in ${inWords(retryAfter)}.`, headers);
  }
}

/** A wait for people: whole minutes from two minutes up, else seconds (rounded up, as Retry-After is). */
export function inWords(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}
