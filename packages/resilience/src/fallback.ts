import {
  assertFunction,
  assertObject,
  type Clock,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
  systemClock,
} from '@stratus/core';
import { contextOf } from './context.js';
import type { Failure } from './failure.js';
import type { ExecuteContext, ExecuteOptions, FailureClassifier, Operation, Policy } from './policy.js';

/** Produces the substitute answer from what went wrong (and the call's context, to keep its signal). */
export type FallbackFunction<R> = (failure: Failure, context: ExecuteContext) => R | PromiseLike<R>;

export interface FallbackOptions<R> {
  /** The substitute: a value, or a function called with the failure (a function is always called). */
  fallback: R | FallbackFunction<R>;
  /**
   * Which outcomes to replace. Default: every error except OperationCancelledError and except errors after
   * the caller cancelled (a caller who gave up wants no substitute), and no results. A classifier given here
   * decides alone, cancellations included.
   */
  handle?: FailureClassifier;
  clock?: Clock;
  name?: string;
}

export interface FallbackEvent extends StratusEvent {
  readonly component: 'fallback';
  /** The operation failed and the fallback answered instead. */
  readonly type: 'fallback';
  readonly cause: Failure;
}

/**
 * A policy whose answer is the operation's value or the fallback's, so `execute` gives `Promise<T | R>`.
 * Seen as a plain Policy (in a pipeline), the result type is the operation's: give a fallback of that type.
 */
export interface FallbackPolicy<R = unknown> extends Policy<FallbackEvent> {
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T | R>;
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T>;
}

/**
 * Answers with a substitute (a cached value, a default, a degraded path) when the operation fails. A
 * failure the fallback function itself throws is the caller's answer: it is not retried or replaced.
 */
export function fallback<R>(options: FallbackOptions<R>): FallbackPolicy<R> {
  return new Fallback(options);
}

class Fallback<R> implements FallbackPolicy<R> {
  readonly name: string;
  readonly events = new EventEmitter<FallbackEvent>();
  readonly clock: Clock;
  readonly #fallback: R | FallbackFunction<R>;
  readonly #handlesError: ((error: unknown) => boolean) | undefined;
  readonly #handlesResult: ((value: unknown) => boolean) | undefined;

  constructor(options: FallbackOptions<R>) {
    assertObject('options', options as unknown);
    if (!('fallback' in options))
      throw new InvalidOptionsError('fallback', 'is required (a value or a function)');
    const handle = options.handle ?? {};
    assertObject('handle', handle as unknown);
    if (handle.error !== undefined) assertFunction('handle.error', handle.error as unknown);
    if (handle.result !== undefined) assertFunction('handle.result', handle.result as unknown);
    this.#fallback = options.fallback;
    this.#handlesError = handle.error;
    this.#handlesResult = handle.result;
    this.clock = options.clock ?? systemClock;
    this.name = options.name ?? 'fallback';
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T | R> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    return this.#run(operation, options, contextOf(options));
  }

  async #run<T>(operation: Operation<T>, options: ExecuteOptions | undefined, context: ExecuteContext) {
    let failure: Failure;
    try {
      const value = await operation(context);
      if (this.#handlesResult === undefined || !this.#handlesResult(value)) return value;
      failure = { result: value };
    } catch (error) {
      if (!this.#handles(error, options)) throw error;
      failure = { error };
    }
    if (this.events.active) {
      this.events.emit({
        component: 'fallback',
        name: this.name,
        type: 'fallback',
        at: this.clock.now(),
        cause: failure,
      });
    }
    const substitute = this.#fallback;
    return typeof substitute === 'function'
      ? await (substitute as FallbackFunction<R>)(failure, context)
      : substitute;
  }

  #handles(error: unknown, options: ExecuteOptions | undefined): boolean {
    if (this.#handlesError !== undefined) return this.#handlesError(error);
    return !(error instanceof OperationCancelledError) && !isCancelled(options);
  }
}
