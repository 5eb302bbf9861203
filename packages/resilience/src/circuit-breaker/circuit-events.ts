// The events a circuit breaker emits, and the fields every one of them carries.
import type { Clock, StratusEvent } from '@stratus/core';
import type { CircuitState, CircuitTransitionReason } from './circuit-state.js';

interface CircuitBreakerEventBase extends StratusEvent {
  readonly component: 'circuit-breaker';
}

export type CircuitBreakerEvent =
  | (CircuitBreakerEventBase & {
      readonly type: 'state-change';
      readonly from: CircuitState;
      readonly to: CircuitState;
      readonly reason: CircuitTransitionReason;
      /** The failure that opened the circuit (on changes to open). */
      readonly lastFailure?: unknown;
    })
  | (CircuitBreakerEventBase & { readonly type: 'rejected'; readonly state: CircuitState })
  | (CircuitBreakerEventBase & {
      readonly type: 'failure';
      /** The state the call was made in. */
      readonly state: CircuitState;
      /** The thrown error, or the returned value the classifier called a failure. */
      readonly failure: unknown;
      readonly durationMs?: number;
    })
  | (CircuitBreakerEventBase & {
      readonly type: 'success';
      readonly state: CircuitState;
      readonly durationMs?: number;
    })
  /** The shared store could not be reached: this instance goes on with its local state. */
  | (CircuitBreakerEventBase & {
      readonly type: 'shared-state-unavailable';
      readonly store: string;
      readonly error: unknown;
    })
  | (CircuitBreakerEventBase & { readonly type: 'shared-state-restored'; readonly store: string });

/** The fields every event of breaker `name` starts with. */
export function eventBase<T extends CircuitBreakerEvent['type']>(name: string, clock: Clock, type: T) {
  return { component: 'circuit-breaker', name, type, at: clock.now() } as const;
}
