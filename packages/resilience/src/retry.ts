import {
  assertCount,
  assertDuration,
  assertFunction,
  assertObject,
  type Backoff,
  type Clock,
  cancelReasonOf,
  describeValue,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  remainingMs,
  type StratusEvent,
  sleep,
  systemClock,
} from '@stratus/core';
import { rootContext } from './context.js';
import { isPolicyRejection } from './errors.js';
import { type Failure, failureValue } from './failure.js';
import { ForwardedContext } from './forwarded-context.js';
import type { ExecuteContext, ExecuteOptions, FailureClassifier, Operation, Policy } from './policy.js';
import { isTransientError, isTransientResult, retryAfterMs } from './transient.js';

export interface RetryOptions {
  /** Attempts in total, the first one included (integer >= 1, or Infinity with a budget); default 4. */
  maxAttempts?: number;
  /** Delay before each retry; default exponential from 100 ms, ×2, capped at 30 s, with equal jitter. */
  backoff?: Backoff;
  /** Total time allowed, from the first attempt: a wait that would end past it is not started. */
  budgetMs?: number;
  /**
   * Which failures to retry. Default: `isTransientError` for errors (network errors, timeouts, HTTP
   * 408/429/5xx) and `isTransientResult` for results (responses with those statuses). Give either member to
   * replace just that one.
   */
  handle?: FailureClassifier;
  /**
   * Retry BrokenCircuitError and BulkheadRejectedError too. Default false: those are refusals by a policy
   * further in, and hammering them only adds load, whatever `handle` says.
   */
  retryPolicyRejections?: boolean;
  /**
   * Wait as long as the failure's Retry-After asks (header in seconds or as an HTTP date, or a
   * `retryAfterMs` property) when that is longer than the backoff delay. Default true.
   */
  honorRetryAfter?: boolean;
  /** Cap on a Retry-After wait; default 60 s. */
  maxRetryAfterMs?: number;
  clock?: Clock;
  name?: string;
}

interface RetryEventBase extends StratusEvent {
  readonly component: 'retry';
}

export type RetryEvent =
  | (RetryEventBase & {
      /** Attempt number `attempt` failed; attempt `attempt + 1` starts after `delayMs`. */
      readonly type: 'retry';
      readonly attempt: number;
      readonly delayMs: number;
      readonly cause: Failure;
      /** Where the delay came from: the backoff, or a longer Retry-After from the failure. */
      readonly reason: 'backoff' | 'retry-after';
    })
  | (RetryEventBase & {
      /** The last failure is reported to the caller as it is. */
      readonly type: 'give-up';
      readonly attempts: number;
      readonly cause: Failure;
      /** max-attempts: none left; budget: the wait would end past budgetMs; deadline: past the caller's deadline. */
      readonly reason: 'max-attempts' | 'budget' | 'deadline';
    })
  | (RetryEventBase & { readonly type: 'success'; readonly attempts: number });

export interface RetryPolicy extends Policy<RetryEvent> {
  readonly maxAttempts: number;
  readonly backoff: Backoff;
}

/**
 * Retries an operation that failed with a transient fault (catalogue P18), waiting between attempts as the
 * backoff (or a longer Retry-After) says. The operation's context carries the 1-based `attempt`.
 *
 * When the attempts run out, the caller gets the last failure as it is: the last error is rethrown, and when
 * the last attempt failed on a result (say a 503 response), that result is returned. Errors the classifier
 * does not handle are rethrown at once. A wait that would end past `budgetMs`, or past the deadline of the
 * caller's signal (an outer timeout), is not started: the last failure is reported at once instead of a
 * timeout later. Cancelling the caller's signal ends a wait at once with OperationCancelledError.
 */
export function retry(options: RetryOptions = {}): RetryPolicy {
  return new Retry(options);
}

const defaultBackoff = exponentialBackoff({ initialMs: 100, factor: 2, maxMs: 30_000, jitter: 'equal' });

function assertOptionalBoolean(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidOptionsError(option, `expected a boolean, got ${describeValue(value)}`);
  }
}

class Retry implements RetryPolicy {
  readonly name: string;
  readonly events = new EventEmitter<RetryEvent>();
  readonly maxAttempts: number;
  readonly backoff: Backoff;
  readonly clock: Clock;
  readonly #budgetMs: number;
  readonly #retryPolicyRejections: boolean;
  readonly #honorRetryAfter: boolean;
  readonly #maxRetryAfterMs: number;
  readonly #isRetryableError: (error: unknown) => boolean;
  readonly #isRetryableResult: (value: unknown) => boolean;

  constructor(options: RetryOptions) {
    assertObject('options', options as unknown);
    const { maxAttempts = 4, backoff = defaultBackoff, handle = {} } = options;
    assertCount('maxAttempts', maxAttempts, 1);
    assertObject('backoff', backoff as unknown);
    assertFunction('backoff.delay', backoff.delay as unknown);
    if (options.budgetMs !== undefined) assertDuration('budgetMs', options.budgetMs);
    else if (maxAttempts === Number.POSITIVE_INFINITY) {
      // Retrying forever with no bound in time is a retry storm waiting to happen.
      throw new InvalidOptionsError('maxAttempts', 'Infinity needs a budgetMs to bound the retries in time');
    }
    if (options.maxRetryAfterMs !== undefined) assertDuration('maxRetryAfterMs', options.maxRetryAfterMs);
    assertOptionalBoolean('retryPolicyRejections', options.retryPolicyRejections);
    assertOptionalBoolean('honorRetryAfter', options.honorRetryAfter);
    assertObject('handle', handle as unknown);
    if (handle.error !== undefined) assertFunction('handle.error', handle.error as unknown);
    if (handle.result !== undefined) assertFunction('handle.result', handle.result as unknown);
    this.maxAttempts = maxAttempts;
    this.backoff = backoff;
    this.#budgetMs = options.budgetMs ?? Number.POSITIVE_INFINITY;
    this.#retryPolicyRejections = options.retryPolicyRejections ?? false;
    this.#honorRetryAfter = options.honorRetryAfter ?? true;
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.#isRetryableError = handle.error ?? isTransientError;
    this.#isRetryableResult = handle.result ?? isTransientResult;
    this.clock = options.clock ?? systemClock;
    this.name = options.name ?? 'retry';
  }

  async execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const started = this.#budgetMs === Number.POSITIVE_INFINITY ? 0 : this.clock.monotonic();
    let context: ExecuteContext = options === undefined ? rootContext : new ForwardedContext(options, 1);
    let previousBackoff = 0;
    for (let attempt = 1; ; attempt++) {
      if (isCancelled(options)) throw new OperationCancelledError(cancelReasonOf(options));
      let failure: Failure<T>;
      try {
        const value = await operation(context);
        if (!this.#isRetryableResult(value)) {
          if (this.events.active) this.#emit({ type: 'success', attempts: attempt });
          return value;
        }
        failure = { result: value };
      } catch (error) {
        if (!this.#isRetryable(error)) throw error;
        failure = { error };
      }

      if (isCancelled(options)) throw new OperationCancelledError(cancelReasonOf(options));
      if (attempt >= this.maxAttempts) return this.#giveUp(failure, attempt, 'max-attempts');
      const backoffMs = this.backoff.delay(attempt, previousBackoff);
      previousBackoff = backoffMs;
      let delayMs = backoffMs;
      let reason: 'backoff' | 'retry-after' = 'backoff';
      if (this.#honorRetryAfter) {
        const asked = retryAfterMs(failureValue(failure), this.clock.now());
        // Capped first: a cap below the backoff must not shorten the backoff wait.
        const wanted = asked === undefined ? undefined : Math.min(asked, this.#maxRetryAfterMs);
        if (wanted !== undefined && wanted > backoffMs) {
          delayMs = wanted;
          reason = 'retry-after';
        }
      }
      if (
        this.#budgetMs !== Number.POSITIVE_INFINITY &&
        this.clock.monotonic() - started + delayMs > this.#budgetMs
      ) {
        return this.#giveUp(failure, attempt, 'budget');
      }
      if (options !== undefined && delayMs >= remainingMs(options)) {
        return this.#giveUp(failure, attempt, 'deadline');
      }
      if (this.events.active) this.#emit({ type: 'retry', attempt, delayMs, cause: failure, reason });
      if (delayMs > 0) await sleep(this.clock, delayMs, options?.signal);
      context = new ForwardedContext(options, attempt + 1);
    }
  }

  #isRetryable(error: unknown): boolean {
    if (!this.#retryPolicyRejections && isPolicyRejection(error)) return false;
    return this.#isRetryableError(error);
  }

  /** Reports the last failure as it is: the error rethrown, a failed result returned. */
  #giveUp<T>(failure: Failure<T>, attempts: number, reason: 'max-attempts' | 'budget' | 'deadline'): T {
    if (this.events.active) this.#emit({ type: 'give-up', attempts, cause: failure, reason });
    if ('error' in failure) throw failure.error;
    return failure.result;
  }

  #emit(
    event:
      | { type: 'retry'; attempt: number; delayMs: number; cause: Failure; reason: 'backoff' | 'retry-after' }
      | { type: 'give-up'; attempts: number; cause: Failure; reason: 'max-attempts' | 'budget' | 'deadline' }
      | { type: 'success'; attempts: number },
  ): void {
    this.events.emit({ component: 'retry', name: this.name, at: this.clock.now(), ...event });
  }
}
