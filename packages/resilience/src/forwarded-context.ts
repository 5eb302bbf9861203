import {
  cancelReasonOf,
  isCancelled,
  LazySignalSource,
  neverAbortedSignal,
  remainingMs,
  type SignalSource,
} from '@stratus/core';
import type { ExecuteContext } from './policy.js';

/**
 * A context with its own attempt number that follows the caller's cancellation lazily: an outer policy's
 * lazy signal (a timeout's) is only created if the operation reads `signal`; cancellation and deadline are
 * read without creating it. (To hand a context on unchanged, use `contextOf` from context.ts.)
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
