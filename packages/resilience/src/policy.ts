import type { EventEmitter, StratusEvent } from '@stratus/core';

/** What an operation run by a policy receives. `signal` aborts when the caller, a timeout or a hedge gives up. */
export interface ExecuteContext {
  readonly signal: AbortSignal;
  /** 1-based attempt number when run under a retry; 1 otherwise. */
  readonly attempt: number;
}

export type Operation<T> = (context: ExecuteContext) => PromiseLike<T> | T;

export interface ExecuteOptions {
  signal?: AbortSignal;
}

/**
 * The one shape every resilience policy has. Policies are stateless per call (all per-call state lives on
 * the stack), so one instance is safe to share across any number of concurrent callers.
 */
export interface Policy<E extends StratusEvent = StratusEvent> {
  readonly name: string;
  readonly events: EventEmitter<E>;
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T>;
}

/** Decides whether an outcome counts as a failure the policy should act on. */
export interface FailureClassifier {
  /** Thrown errors; default: every error. */
  error?: (error: unknown) => boolean;
  /** Returned values that should be treated as failures (e.g. an HTTP 503 response); default: none. */
  result?: (value: unknown) => boolean;
}
