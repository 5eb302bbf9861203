import {
  assertDuration,
  assertFunction,
  assertInteger,
  assertObject,
  assertRatio,
  type Clock,
  type Deadline,
  type DeadlineBucket,
  DeadlineScheduler,
  EventEmitter,
  InvalidOptionsError,
  neverAbortedSignal,
  OperationCancelledError,
  type StratusEvent,
  systemClock,
} from '@stratus/core';
import { LatencyWindow } from './latency-window.js';
import type { ExecuteContext, ExecuteOptions, FailureClassifier, Operation, Policy } from './policy.js';

/** Hedge once the running attempt is slower than this percentile of recent successful attempts. */
export interface HedgingPercentileDelay {
  /** Percentile in (0, 1], e.g. 0.95. */
  percentile: number;
  /** Successful samples needed before the percentile is trusted; default 20. */
  minSamples?: number;
  /** Delay used until there are `minSamples` samples. */
  fallbackMs: number;
  /** How many recent samples the percentile covers; default 256. */
  windowSize?: number;
}

export interface HedgingOptions {
  /** Extra attempts allowed beyond the first (integer >= 1): 2 means up to 3 in flight. */
  maxHedgedAttempts: number;
  /** Launch the next attempt when the previous one has run this long without an outcome. */
  delayMs?: number;
  /** Like delayMs, but adapted to the observed latency. Give either delayMs or delay, not both. */
  delay?: HedgingPercentileDelay;
  /**
   * Launch the next attempt at once when one fails (default true, as Polly). Without delayMs or delay this is
   * Polly's fallback mode: attempts run one after another. When false, the call fails as soon as every
   * attempt in flight has failed.
   */
  hedgeOnFailure?: boolean;
  /** Which outcomes count as failures (default: every error, no result). Other errors end the call at once. */
  handle?: FailureClassifier;
  clock?: Clock;
  name?: string;
}

interface HedgingEventBase extends StratusEvent {
  readonly component: 'hedging';
  /** 1-based number of the attempt concerned (1 is the original call). */
  readonly attempt: number;
  /** Milliseconds since the call started. */
  readonly afterMs: number;
}

export type HedgingEvent =
  | (HedgingEventBase & { readonly type: 'hedge'; readonly reason: 'delay' | 'failure' })
  | (HedgingEventBase & { readonly type: 'winner' });

export interface HedgingPolicy extends Policy<HedgingEvent> {
  /** The delay after which a call starting now would launch its first hedge; undefined in fallback mode. */
  readonly hedgeDelayMs: number | undefined;
}

/**
 * Hedging: when an attempt is slow (or fails), launch another copy of the operation in parallel; the first
 * success wins and the losers are aborted through their own signals. Use it only for idempotent operations.
 */
export function hedging(options: HedgingOptions): HedgingPolicy {
  return new Hedging(options);
}

const DEFAULT_MIN_SAMPLES = 20;
const DEFAULT_WINDOW_SIZE = 256;

class Hedging implements HedgingPolicy {
  readonly name: string;
  readonly events = new EventEmitter<HedgingEvent>();
  readonly clock: Clock;
  /** Hedge delays of all calls share one timer per clock: no setTimeout/clearTimeout pair per call. */
  readonly scheduler: DeadlineScheduler;
  readonly totalAttempts: number;
  readonly hedgeOnFailure: boolean;
  readonly isFailedError: ((error: unknown) => boolean) | undefined;
  readonly isFailedResult: ((value: unknown) => boolean) | undefined;
  /** Set only in percentile mode: successful attempts record their latency here. */
  readonly latencies: LatencyWindow | undefined;
  readonly #delayMs: number | undefined;
  readonly #percentile: Required<HedgingPercentileDelay> | undefined;

  constructor(options: HedgingOptions) {
    assertObject('options', options);
    assertInteger('maxHedgedAttempts', options.maxHedgedAttempts, 1);
    const { delayMs, delay, hedgeOnFailure = true, handle } = options;
    if (typeof hedgeOnFailure !== 'boolean')
      throw new InvalidOptionsError('hedgeOnFailure', 'expected a boolean');
    if (delayMs !== undefined && delay !== undefined) {
      throw new InvalidOptionsError('delay', 'give either delayMs or delay, not both');
    }
    if (delayMs !== undefined) assertDuration('delayMs', delayMs);
    if (delay !== undefined) {
      assertObject('delay', delay);
      assertRatio('delay.percentile', delay.percentile, { exclusiveMin: true });
      assertDuration('delay.fallbackMs', delay.fallbackMs);
      const windowSize = delay.windowSize ?? DEFAULT_WINDOW_SIZE;
      assertInteger('delay.windowSize', windowSize, 1);
      const minSamples = delay.minSamples ?? Math.min(DEFAULT_MIN_SAMPLES, windowSize);
      assertInteger('delay.minSamples', minSamples, 1, windowSize);
      this.#percentile = {
        percentile: delay.percentile,
        fallbackMs: delay.fallbackMs,
        minSamples,
        windowSize,
      };
      this.latencies = new LatencyWindow(windowSize);
    }
    if (delayMs === undefined && delay === undefined && !hedgeOnFailure) {
      throw new InvalidOptionsError('delayMs', 'without delayMs or delay, hedgeOnFailure must be true');
    }
    if (handle !== undefined) {
      assertObject('handle', handle as unknown);
      if (handle.error !== undefined) assertFunction('handle.error', handle.error);
      if (handle.result !== undefined) assertFunction('handle.result', handle.result);
    }
    this.#delayMs = delayMs;
    this.totalAttempts = options.maxHedgedAttempts + 1;
    this.hedgeOnFailure = hedgeOnFailure;
    this.isFailedError = handle?.error;
    this.isFailedResult = handle?.result;
    this.name = options.name ?? 'hedging';
    this.clock = options.clock ?? systemClock;
    this.scheduler = DeadlineScheduler.for(this.clock);
  }

  get hedgeDelayMs(): number | undefined {
    const p = this.#percentile;
    if (p === undefined || this.latencies === undefined) return this.#delayMs;
    if (this.latencies.size < p.minSamples) return p.fallbackMs;
    return this.latencies.percentile(p.percentile);
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(new OperationCancelledError(signal.reason));
    return new HedgedCall(this, operation, signal).promise;
  }
}

/** What an attempt needs from its call. */
interface AttemptOwner {
  /** Why an attempt's signal must start aborted (it read the signal only after the call settled), if so. */
  abortReasonFor(attempt: Attempt): { reason: unknown } | undefined;
}

/** One attempt; it is also the context its operation receives, with a signal made only if read. */
class Attempt implements ExecuteContext {
  #controller: AbortController | undefined;

  constructor(
    readonly owner: AttemptOwner,
    readonly attempt: number,
    readonly startedAt: number,
  ) {}

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      const aborted = this.owner.abortReasonFor(this);
      if (aborted !== undefined) this.#controller.abort(aborted.reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the operation if it holds a signal; one that never read it cannot be told anyway. */
  abort(reason: unknown): void {
    this.#controller?.abort(reason);
  }
}

/** The last failed outcome: a thrown error, or a result the classifier called a failure. */
type Failure<T> =
  | { readonly thrown: true; readonly error: unknown }
  | { readonly thrown: false; readonly value: T };

/** The state of one hedged execution; it is also its hedge deadline and the listener of the caller's signal. */
class HedgedCall<T> implements Deadline, AttemptOwner {
  deadlineBucket: DeadlineBucket | undefined = undefined;
  deadlineIndex = 0;
  readonly promise: Promise<T>;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  readonly #attempts: Attempt[] = [];
  readonly #startedAt: number;
  readonly #delayMs: number | undefined;
  #inFlight = 0;
  #settled = false;
  /** The attempt whose outcome settled the call (undefined if the caller aborted or all attempts failed). */
  #settledBy: Attempt | undefined;

  constructor(
    readonly policy: Hedging,
    readonly operation: Operation<T>,
    readonly signal: AbortSignal | undefined,
  ) {
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#startedAt = policy.clock.monotonic();
    this.#delayMs = policy.hedgeDelayMs;
    // The shared signal of calls made without one never aborts; listening to it would only pile up listeners.
    if (signal !== neverAbortedSignal) signal?.addEventListener('abort', this, { once: true });
    this.#launch(this.#startedAt);
    this.#arm(this.#startedAt);
  }

  /** The hedge delay passed with no outcome. */
  expire(): void {
    this.#hedge('delay');
  }

  abortReasonFor(attempt: Attempt): { reason: unknown } | undefined {
    if (!this.#settled || attempt === this.#settledBy) return undefined;
    return { reason: this.#abortReason() };
  }

  /** The caller's signal fired. */
  handleEvent(): void {
    if (this.#settled) return;
    this.#settle(undefined);
    this.#reject(new OperationCancelledError(this.signal?.reason));
  }

  #launch(now: number): void {
    const attempt = new Attempt(this, this.#attempts.length + 1, now);
    this.#attempts.push(attempt);
    this.#inFlight++;
    let result: T | PromiseLike<T>;
    try {
      result = this.operation(attempt);
    } catch (error) {
      this.#onError(attempt, error);
      return;
    }
    Promise.resolve(result).then(
      (value) => this.#onValue(attempt, value),
      (error: unknown) => this.#onError(attempt, error),
    );
  }

  /** (Re)schedules the hedge deadline `delayMs` after `now`, if another attempt may still be launched. */
  #arm(now: number): void {
    const { scheduler, totalAttempts } = this.policy;
    if (this.#settled || this.#delayMs === undefined || this.#attempts.length >= totalAttempts) {
      scheduler.remove(this);
    } else {
      scheduler.add(this, now + this.#delayMs);
    }
  }

  #hedge(reason: 'delay' | 'failure'): void {
    const { events, clock } = this.policy;
    const now = clock.monotonic();
    if (events.active) {
      const afterMs = now - this.#startedAt;
      events.emit({ ...this.#eventBase(this.#attempts.length + 1, afterMs), type: 'hedge', reason });
    }
    this.#launch(now);
    this.#arm(now);
  }

  #onValue(attempt: Attempt, value: T): void {
    this.#inFlight--;
    const { isFailedResult, latencies, clock, events } = this.policy;
    if (isFailedResult !== undefined) {
      let failed: boolean;
      try {
        failed = isFailedResult(value);
      } catch (error) {
        this.#end(attempt, error);
        return;
      }
      if (failed) {
        this.#onFailure({ thrown: false, value });
        return;
      }
    }
    latencies?.record(clock.monotonic() - attempt.startedAt);
    if (this.#settled) return;
    this.#settle(attempt);
    if (events.active) {
      const afterMs = clock.monotonic() - this.#startedAt;
      events.emit({ ...this.#eventBase(attempt.attempt, afterMs), type: 'winner' });
    }
    this.#resolve(value);
  }

  #onError(attempt: Attempt, error: unknown): void {
    this.#inFlight--;
    if (this.#settled) return;
    const { isFailedError } = this.policy;
    let failed = true;
    if (isFailedError !== undefined) {
      try {
        failed = isFailedError(error);
      } catch (classifierError) {
        this.#end(attempt, classifierError);
        return;
      }
    }
    if (failed) {
      this.#onFailure({ thrown: true, error });
      return;
    }
    // An error hedging does not handle is the answer, as a success would be.
    this.#end(attempt, error);
  }

  /**
   * Ends the call with `error` (one hedging does not handle, or a classifier's own), which runs in a promise
   * handler: were it thrown there, it would be an unhandled rejection and the call would never settle.
   */
  #end(attempt: Attempt, error: unknown): void {
    if (this.#settled) return;
    this.#settle(attempt);
    this.#reject(error);
  }

  /** An attempt failed: hedge again at once, or wait for the others, or give up with this outcome. */
  #onFailure(failure: Failure<T>): void {
    if (this.#settled) return;
    if (this.policy.hedgeOnFailure && this.#attempts.length < this.policy.totalAttempts) {
      this.#hedge('failure');
      return;
    }
    if (this.#inFlight > 0) return;
    this.#settle(undefined);
    if (failure.thrown) this.#reject(failure.error);
    else this.#resolve(failure.value);
  }

  /** Marks the call settled, stops the timer and aborts every other attempt still running. */
  #settle(settledBy: Attempt | undefined): void {
    this.#settled = true;
    this.#settledBy = settledBy;
    this.policy.scheduler.remove(this);
    this.signal?.removeEventListener('abort', this);
    if (this.#inFlight === 0) return;
    const reason = this.#abortReason();
    for (const attempt of this.#attempts) if (attempt !== settledBy) attempt.abort(reason);
  }

  /** Made only when some attempt needs it: building a DOMException captures a stack. */
  #abortReason(): unknown {
    if (this.signal?.aborted) return this.signal.reason;
    const by = this.#settledBy === undefined ? '' : ` by attempt ${this.#settledBy.attempt}`;
    return new DOMException(`The hedged call was already settled${by}`, 'AbortError');
  }

  #eventBase(attempt: number, afterMs: number) {
    return {
      component: 'hedging',
      name: this.policy.name,
      at: this.policy.clock.now(),
      attempt,
      afterMs,
    } as const;
  }
}
