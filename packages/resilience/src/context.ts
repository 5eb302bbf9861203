import { neverAbortedSignal } from '@stratus/core';
import type { ExecuteContext, ExecuteOptions, Operation } from './policy.js';

/** The context of every call made without a signal: shared, so the happy path allocates nothing. */
export const rootContext: ExecuteContext = Object.freeze({ signal: neverAbortedSignal, attempt: 1 });

/** The context handed to an operation run on behalf of a caller holding `signal`. */
export function contextFor(signal: AbortSignal | undefined): ExecuteContext {
  return signal === undefined ? rootContext : { signal, attempt: 1 };
}

/**
 * The context for an operation run on behalf of `options`. A context handed on as options by an outer
 * policy (pipelines do this) is used as it is, so its attempt number shows and its lazy signal stays unmade.
 */
export function contextOf(options: ExecuteOptions | undefined): ExecuteContext {
  if (options === undefined) return rootContext;
  if (typeof (options as Partial<ExecuteContext>).attempt === 'number') return options as ExecuteContext;
  return contextFor(options.signal);
}

/**
 * Runs `operation` and always answers with a promise: a synchronous throw becomes a rejection. Cheaper than
 * an `async` wrapper because it adds no extra async frame.
 */
export function runOperation<T>(operation: Operation<T>, context: ExecuteContext): Promise<T> {
  try {
    return Promise.resolve(operation(context));
  } catch (error) {
    return Promise.reject(error);
  }
}
