import {
  cancelReasonOf,
  isCancelled,
  LazySignalSource,
  neverAbortedSignal,
  remainingMs,
  type SignalSource,
} from '@stratus/core';
import { contextFor, rootContext } from './context.js';
import type { ExecuteContext, ExecuteOptions } from './policy.js';

/**
 * A context that follows the caller's cancellation lazily: an outer policy's lazy signal (a timeout's) is
 * only created if the operation reads `signal`; cancellation and deadline are read without creating it.
 */
export class ForwardedContext extends LazySignalSource implements ExecuteContext {
  constructor(
    readonly source: SignalSource,
    readonly attempt: number,
  ) {
    super();
  }

  get signal(): AbortSignal {
    return this.source?.signal ?? neverAbortedSignal;
  }

  get cancelled(): boolean {
    return isCancelled(this.source);
  }

  get cancelReason(): unknown {
    return cancelReasonOf(this.source);
  }

  remainingMs(): number {
    return remainingMs(this.source);
  }
}

/**
 * The context for an operation run on behalf of `options`, for a policy that adds no signal of its own. An
 * outer policy's context (a pipeline hands contexts on as options) is passed as it is: it keeps its attempt
 * number, and a lazy signal stays unmade unless the operation reads it. Check cancellation with
 * `isCancelled(options)` rather than `options.signal.aborted` for the same reason.
 */
export function forwardedContext(options: ExecuteOptions | undefined): ExecuteContext {
  if (options === undefined) return rootContext;
  if (typeof (options as Partial<ExecuteContext>).attempt === 'number') return options as ExecuteContext;
  return contextFor(options.signal);
}
