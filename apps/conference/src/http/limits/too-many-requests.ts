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

  /** The refusal of `result` (from the limit named `policy` over `windowMs`), its message ending in when to retry. */
  static of(
    message: string,
    result: RateLimitResult,
    policy: string,
    windowMs: number,
  ): TooManyRequestsError {
    return new TooManyRequestsError(
      `${message} Try again in ${inWords(result.retryAfterMs)}.`,
      rateLimitHeaders(result, { policy, windowMs }),
    );
  }
}

/** A wait for people: whole minutes from two minutes up, else seconds (rounded up, as Retry-After is). */
export function inWords(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  return `${Math.ceil(seconds / 60)} minutes`;
}
