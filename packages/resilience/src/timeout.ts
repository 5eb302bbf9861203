import { AsyncLocalStorage } from 'node:async_hooks';
import {
  assertDuration,
  assertObject,
  assertOneOf,
  type Clock,
  cancelReasonOf,
  type Deadline,
  DeadlineScheduler,
  EventEmitter,
  isCancelled,
  LazySignalSource,
  neverAbortedSignal,
  OperationCancelledError,
  remainingMs,
  type SignalSource,
  type StratusEvent,
  setSignalDeadline,
  systemClock,
} from '@stratus/core';
import { TimeoutError } from './errors.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from './policy.js';

/**
 * - cooperative: at the deadline the operation's signal aborts and the policy waits for the operation to
 *   settle. If it then rejects, the policy rejects with TimeoutError; if it still resolves, its value is
 *   returned (the work is done, throwing it away helps nobody; Polly's optimistic timeout does the same).
 * - aggressive: at the deadline the policy rejects with TimeoutError at once, even if the operation ignores
 *   its signal (which is still aborted). A late outcome of the operation is ignored.
 */
export type TimeoutStrategy = 'cooperative' | 'aggressive';

export interface TimeoutOptions {
  /** Time allowed for the operation, ms (> 0). */
  timeoutMs: number;
  /** Default 'cooperative'. */
  strategy?: TimeoutStrategy;
  clock?: Clock;
  name?: string;
}

export interface TimeoutEvent extends StratusEvent {
  readonly component: 'timeout';
  /** The deadline passed while the operation was running. */
  readonly type: 'timeout';
  readonly timeoutMs: number;
  readonly strategy: TimeoutStrategy;
}

export interface TimeoutPolicy extends Policy<TimeoutEvent> {
  readonly timeoutMs: number;
  readonly strategy: TimeoutStrategy;
}

/**
 * Bounds the time an operation may take. The operation gets a signal that aborts at the deadline (or when
 * the caller's signal aborts); `remainingMs(context.signal)` tells it how long it has left.
 *
 * Nested timeouts take the earliest deadline: an inner one, given the outer's context (or signal) as its
 * options, reports the earlier deadline through `remainingMs`, fails when the outer's deadline aborts the
 * outer signal, and cannot extend it. The caller's own signal
 * still cancels: the policy then rejects with OperationCancelledError, not TimeoutError.
 *
 * Cheap by construction: all pending deadlines of a clock share one timer (DeadlineScheduler), and the
 * AbortController behind `context.signal` is only created if the operation reads the signal.
 */
export function timeout(options: TimeoutOptions | number): TimeoutPolicy {
  return new Timeout(typeof options === 'number' ? { timeoutMs: options } : options);
}

class Timeout implements TimeoutPolicy {
  readonly name: string;
  readonly events = new EventEmitter<TimeoutEvent>();
  readonly timeoutMs: number;
  readonly strategy: TimeoutStrategy;
  readonly clock: Clock;
  readonly scheduler: DeadlineScheduler;

  constructor(options: TimeoutOptions) {
    assertObject('options', options as unknown);
    assertDuration('timeoutMs', options.timeoutMs, { allowZero: false });
    if (options.strategy !== undefined)
      assertOneOf('strategy', options.strategy, ['cooperative', 'aggressive'] as const);
    this.timeoutMs = options.timeoutMs;
    this.strategy = options.strategy ?? 'cooperative';
    this.clock = options.clock ?? systemClock;
    this.scheduler = DeadlineScheduler.for(this.clock);
    this.name = options.name ?? 'timeout';
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    const call = new TimeoutCall(this, options, this.clock.monotonic() + this.timeoutMs);
    if (this.events.active) call.runInContext = AsyncLocalStorage.snapshot();
    this.scheduler.add(call, call.at);
    if (this.strategy === 'cooperative') return cooperative(call, operation);
    return new Promise<T>((resolve, reject) => {
      call.settle = (ok, outcome) => (ok ? resolve(outcome as T) : reject(outcome));
      // Aggressive means not waiting for the operation, so the caller's abort must be heard at once.
      const callerSignal = options?.signal;
      if (callerSignal !== undefined) call.listen(callerSignal);
      aggressive(call, operation);
    });
  }
}

async function cooperative<T>(call: TimeoutCall, operation: Operation<T>): Promise<T> {
  try {
    return await operation(call);
  } catch (error) {
    throw call.failure(error);
  } finally {
    call.finish();
  }
}

async function aggressive<T>(call: TimeoutCall, operation: Operation<T>): Promise<void> {
  try {
    const value = await operation(call);
    call.settleOnce(true, value);
  } catch (error) {
    call.settleOnce(false, call.failure(error));
  }
}

/**
 * The state of one call, on the heap only for its duration. It is also the operation's ExecuteContext (a
 * lazy signal source: no AbortSignal unless the operation reads it), its scheduled deadline, and the
 * listener of the caller's signal (via handleEvent), so a call costs one object plus its promise.
 */
class TimeoutCall extends LazySignalSource implements ExecuteContext, Deadline {
  readonly attempt = 1;
  deadlineBucket: Deadline['deadlineBucket'] = undefined;
  deadlineIndex = 0;
  /** Aggressive only: settles the policy's promise with a value (ok) or an error. */
  settle: ((ok: boolean, outcome: unknown) => void) | undefined = undefined;
  #controller: AbortController | undefined = undefined;
  #timedOut: TimeoutError | undefined = undefined;
  /** The caller's signal while this call listens to it. */
  #listening: AbortSignal | undefined = undefined;
  /** Set by finish(): a signal read after that must not listen, as nothing would remove the listener. */
  #finished = false;
  /** The caller's async context, captured only when someone listens to events (it costs a closure). */
  runInContext: (<R>(fn: () => R) => R) | undefined = undefined;

  constructor(
    readonly policy: Timeout,
    /** The caller's options, or the context of an outer policy. */
    readonly source: SignalSource,
    /** Monotonic deadline on the policy's clock. */
    readonly at: number,
  ) {
    super();
  }

  get cancelled(): boolean {
    return this.#timedOut !== undefined || isCancelled(this.source);
  }

  get cancelReason(): unknown {
    return isCancelled(this.source) ? cancelReasonOf(this.source) : this.#timedOut;
  }

  /** The earlier of this deadline and any outer one. */
  remainingMs(): number {
    if (this.#timedOut !== undefined) return 0;
    const own = Math.max(0, this.at - this.policy.clock.monotonic());
    return Math.min(own, remainingMs(this.source));
  }

  /** Created on first read: most operations never look at it. */
  get signal(): AbortSignal {
    if (this.#controller !== undefined) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    if (this.cancelled) {
      controller.abort(this.cancelReason);
    } else {
      const callerSignal = this.source?.signal;
      if (callerSignal !== undefined) this.listen(callerSignal);
    }
    const { clock } = this.policy;
    setSignalDeadline(controller.signal, clock, clock.monotonic() + this.remainingMs());
    return controller.signal;
  }

  listen(callerSignal: AbortSignal): void {
    // The shared signal of calls made without one never aborts: listening to it would only pile up listeners.
    if (this.#listening !== undefined || this.#finished || callerSignal === neverAbortedSignal) return;
    this.#listening = callerSignal;
    callerSignal.addEventListener('abort', this);
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    const reason = this.#listening?.reason;
    this.#controller?.abort(reason);
    this.settleOnce(false, new OperationCancelledError(reason));
  }

  expire(): void {
    const { policy } = this;
    const error = new TimeoutError(policy.timeoutMs);
    this.#timedOut = error;
    if (policy.events.active) {
      // The shared timer fires in the async context of whichever call armed it; report in this call's own
      // context so the event lands on this call's span and log context.
      const emit = () =>
        policy.events.emit({
          component: 'timeout',
          name: policy.name,
          type: 'timeout',
          at: policy.clock.now(),
          timeoutMs: policy.timeoutMs,
          strategy: policy.strategy,
        });
      const inContext = this.runInContext;
      if (inContext === undefined) emit();
      else inContext(emit);
    }
    this.#controller?.abort(error);
    this.settleOnce(false, error);
  }

  /** Aggressive strategy: the first of outcome, deadline and caller abort wins; the others are ignored. */
  settleOnce(ok: boolean, outcome: unknown): void {
    const settle = this.settle;
    if (settle === undefined) return;
    this.settle = undefined;
    this.finish();
    settle(ok, outcome);
  }

  /** What the policy reports when the operation rejected with `error`. */
  failure(error: unknown): unknown {
    if (isCancelled(this.source)) {
      return error instanceof OperationCancelledError
        ? error
        : new OperationCancelledError(cancelReasonOf(this.source));
    }
    return this.#timedOut ?? error;
  }

  finish(): void {
    this.#finished = true;
    this.policy.scheduler.remove(this);
    const listening = this.#listening;
    if (listening !== undefined) {
      this.#listening = undefined;
      listening.removeEventListener('abort', this);
    }
  }
}
