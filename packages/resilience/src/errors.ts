import { StratusError } from '@stratus/core';

/** The circuit is open (or half-open with no trial slot left): the call was not attempted. */
export class BrokenCircuitError extends StratusError {
  constructor(
    message: string,
    /** The failure that opened the circuit, when known. */
    readonly lastFailure: unknown,
    /** Epoch ms at which the breaker will next admit a trial call (undefined while isolated). */
    readonly retryAt: number | undefined,
    code = 'ERR_STRATUS_BROKEN_CIRCUIT',
  ) {
    super(code, message, { cause: lastFailure });
  }
}

/** The circuit was isolated (held open) by hand. */
export class IsolatedCircuitError extends BrokenCircuitError {
  constructor(lastFailure?: unknown) {
    super('The circuit is isolated', lastFailure, undefined, 'ERR_STRATUS_ISOLATED_CIRCUIT');
  }
}

/** A bulkhead had no free slot and no room (or no time) left in its queue. */
export class BulkheadRejectedError extends StratusError {
  constructor(
    readonly reason: 'full' | 'queue-timeout',
    readonly maxConcurrent: number,
    readonly maxQueued: number,
    readonly partition?: string,
  ) {
    super(
      'ERR_STRATUS_BULKHEAD_REJECTED',
      reason === 'full'
        ? `Bulkhead full (${maxConcurrent} running, ${maxQueued} queued)${partition ? ` for "${partition}"` : ''}`
        : `Bulkhead queue wait timed out${partition ? ` for "${partition}"` : ''}`,
    );
  }
}

/** The operation ran past its deadline. */
export class TimeoutError extends StratusError {
  constructor(readonly timeoutMs: number) {
    super('ERR_STRATUS_TIMEOUT', `Operation timed out after ${timeoutMs} ms`);
  }
}

/** A rate limiter refused the call; `retryAfterMs` says when a retry can succeed. */
export class RateLimitedError extends StratusError {
  constructor(
    readonly key: string,
    readonly retryAfterMs: number,
    readonly limit: number,
  ) {
    super(
      'ERR_STRATUS_RATE_LIMITED',
      `Rate limit of ${limit} exceeded for "${key}"; retry in ${Math.ceil(retryAfterMs)} ms`,
    );
  }
}

/**
 * Errors that mean "this call was refused on purpose by a resilience policy": retrying them at once is
 * pointless and only adds load, so Retry skips them by default.
 */
export function isPolicyRejection(error: unknown): boolean {
  return error instanceof BrokenCircuitError || error instanceof BulkheadRejectedError;
}
