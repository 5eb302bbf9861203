import { cancelReasonOf, isCancelled, OperationCancelledError } from '@stratus/core';
import { contextOf } from '../context.js';
import type { ExecuteOptions, Operation, Policy } from '../policy.js';
import {
  type CircuitBreakerOptions,
  resolveCircuitOptions,
  retryAfterOf,
} from './circuit-breaker-options.js';
import { type CircuitBreakerEvent, eventBase } from './circuit-events.js';
import type { CircuitBreakerSnapshot } from './circuit-snapshot.js';
import {
  CANCELLED,
  type CircuitState,
  CLOSED,
  FAILED,
  HALF_OPEN,
  type OutcomeKind,
  STATE_NAMES,
  SUCCEEDED,
} from './circuit-state.js';
import { CircuitStateMachine } from './circuit-state-machine.js';
import {
  type CircuitSync,
  type CircuitSyncHost,
  createCircuitSync,
  type TrialOutcome,
} from './circuit-sync.js';

// The breaker's vocabulary, defined beside it and exported from here as before the split.
export type { CircuitBreakerOptions, HalfOpenOptions, RetryAfterOptions } from './circuit-breaker-options.js';
export type { CircuitBreakerEvent } from './circuit-events.js';
export type { CircuitBreakerSnapshot } from './circuit-snapshot.js';
export type { CircuitState, CircuitTransitionReason } from './circuit-state.js';

export interface CircuitBreakerPolicy extends Policy<CircuitBreakerEvent> {
  /** The current state; an open circuit whose period ran out reads as half-open. */
  readonly state: CircuitState;
  /** The last failure seen (thrown error or failing result), if any. */
  readonly lastFailure: unknown;
  /**
   * Holds the circuit open by hand (calls fail with IsolatedCircuitError) until every returned release
   * function has been called; releasing closes the circuit.
   */
  isolate(): () => void;
  /** Forces the circuit closed and forgets its counters (also ends any isolation). */
  reset(): void;
  exportState(): CircuitBreakerSnapshot;
  toJSON(): CircuitBreakerSnapshot;
  /** With `shared`: whether the store answered last time (undefined without `shared`). */
  readonly sharedStateAvailable: boolean | undefined;
  /** With `shared`: one synchronisation round now (read or heartbeat, then pending writes). Never rejects. */
  sync(): Promise<void>;
  /** Stops background synchronisation and ends store subscriptions (quorum: withdraws this instance). */
  dispose(): Promise<void>;
}

/**
 * A circuit breaker (catalogue P02): runs calls while closed, counts failures with a trip rule, fails fast
 * while open, and after the open period admits a few trial calls whose outcome closes or reopens it.
 */
export function circuitBreaker(options: CircuitBreakerOptions = {}): CircuitBreakerPolicy {
  return new CircuitBreaker(options);
}

class CircuitBreaker extends CircuitStateMachine implements CircuitBreakerPolicy {
  readonly #isFailureError: ((error: unknown) => boolean) | undefined;
  readonly #isFailureResult: ((value: unknown) => boolean) | undefined;
  readonly #maxTrials: number;
  readonly #storeKind: string;

  constructor(options: CircuitBreakerOptions) {
    const settings = resolveCircuitOptions(options);
    super(settings, options.initialState);
    this.#isFailureError = settings.isFailureError;
    this.#isFailureResult = settings.isFailureResult;
    this.#maxTrials = settings.maxTrials;
    this.#storeKind = options.shared?.store?.kind ?? '';
    if (options.shared !== undefined) {
      this.shared = createCircuitSync(options.shared, this.#syncHost(), {
        maxTrials: settings.maxTrials,
        successesToClose: settings.successesToClose,
        named: options.name !== undefined,
      });
    }
  }

  get state(): CircuitState {
    this.refresh();
    return STATE_NAMES[this.code]!;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    return this.code === CLOSED ? this.#run(operation, options) : this.#guarded(operation, options);
  }

  toJSON(): CircuitBreakerSnapshot {
    return this.exportState();
  }

  get sharedStateAvailable(): boolean | undefined {
    return this.shared?.available;
  }

  async sync(): Promise<void> {
    await this.shared?.sync();
  }

  async dispose(): Promise<void> {
    await this.shared?.dispose();
  }

  /** Runs `operation` in the current state: closed, or as an admitted half-open trial. */
  async #run<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    const generation = this.generation;
    if (isCancelled(source)) {
      // A half-open call holds a trial slot (a shared trial whose caller gave up while the store answered).
      this.settleCancelled(generation);
      throw new OperationCancelledError(cancelReasonOf(source));
    }
    const start = this.needsDuration ? this.clock.monotonic() : 0;
    let value: T;
    // A classifier that throws ends the call with its error; the call then counts as cancelled (decides
    // nothing, frees its trial slot), hence `kind` starting as CANCELLED and the settling in `finally`.
    let kind: OutcomeKind = CANCELLED;
    try {
      value = await operation(contextOf(source));
    } catch (error) {
      try {
        kind = this.#failureKind(error, source);
      } finally {
        this.settle(kind, error, generation, start);
      }
      throw error;
    }
    try {
      kind = this.#isFailureResult?.(value) ? FAILED : SUCCEEDED;
    } finally {
      this.settle(kind, value, generation, start);
    }
    return value;
  }

  /** Every state but closed: reject, or admit a trial call. */
  async #guarded<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    if (isCancelled(source)) throw new OperationCancelledError(cancelReasonOf(source));
    this.refresh();
    const state = this.code;
    if (state === CLOSED) return this.#run(operation, source);
    if (state === HALF_OPEN && this.trialsInFlight < this.#maxTrials) {
      // Taken synchronously, before any await: concurrent callers can never exceed the trial slots.
      this.trialsInFlight++;
      const sync = this.shared;
      return sync?.acquireTrial && sync.available
        ? this.#sharedTrial(operation, source, sync)
        : this.#run(operation, source);
    }
    throw this.rejection(state);
  }

  /** A half-open trial whose slot is leased from the shared store, so trials are bounded cluster-wide. */
  async #sharedTrial<T>(
    operation: Operation<T>,
    source: ExecuteOptions | undefined,
    sync: CircuitSync,
  ): Promise<T> {
    const generation = this.generation;
    const admission = await (sync.acquireTrial as NonNullable<CircuitSync['acquireTrial']>)();
    const unchanged = generation === this.generation;
    if (admission.kind === 'unavailable' && unchanged) return this.#run(operation, source);
    if (admission.kind !== 'granted') {
      if (unchanged) this.trialsInFlight--;
      // The store's answer has been adopted: closed runs the call, anything else refuses it.
      if (this.code === CLOSED) return this.#run(operation, source);
      throw this.rejection(this.code);
    }
    const start = this.needsDuration ? this.clock.monotonic() : 0;
    let value: T;
    // As in #run: a classifier that throws leaves `kind` CANCELLED, which still returns the lease.
    let kind: OutcomeKind = CANCELLED;
    try {
      value = await operation(contextOf(source));
    } catch (error) {
      try {
        kind = this.#failureKind(error, source);
      } finally {
        await this.#completeTrial(sync, admission.lease, kind, error, generation, start);
      }
      throw error;
    }
    try {
      kind = this.#isFailureResult?.(value) ? FAILED : SUCCEEDED;
    } finally {
      await this.#completeTrial(sync, admission.lease, kind, value, generation, start);
    }
    return value;
  }

  /** Reports a shared trial to the store; if the store cannot take it, the trial counts locally instead. */
  async #completeTrial(
    sync: CircuitSync,
    lease: string,
    kind: OutcomeKind,
    outcome: unknown,
    generation: number,
    start: number,
  ): Promise<void> {
    const report: TrialOutcome =
      kind === FAILED
        ? {
            kind: 'failure',
            failure: outcome,
            retryAfterMs: retryAfterOf(outcome, this.settings.retryAfter, this.clock),
          }
        : { kind: kind === CANCELLED ? 'cancelled' : 'success' };
    const stored = await (sync.completeTrial as NonNullable<CircuitSync['completeTrial']>)(lease, report);
    if (stored) this.trialStored(kind, outcome, generation, start);
    else this.settle(kind, outcome, generation, start);
  }

  /** What an error means for the circuit: a cancellation by the caller never counts. */
  #failureKind(error: unknown, source: ExecuteOptions | undefined): OutcomeKind {
    if (error instanceof OperationCancelledError || (isCancelled(source) && error === cancelReasonOf(source)))
      return CANCELLED;
    return this.#isFailureError === undefined || this.#isFailureError(error) ? FAILED : SUCCEEDED;
  }

  #syncHost(): CircuitSyncHost {
    return {
      name: this.name,
      clock: this.clock,
      adopt: (record, reason) => this.adopt(record, reason),
      openByQuorum: () => {
        if (this.code === CLOSED) this.open('quorum', undefined, 0, this.clock.monotonic(), true);
      },
      openDelay: this.settings.openDelay,
      storeAvailabilityChanged: (available, error) => {
        if (!this.events.active) return;
        const store = this.#storeKind;
        if (available)
          this.events.emit({ ...eventBase(this.name, this.clock, 'shared-state-restored'), store });
        else
          this.events.emit({
            ...eventBase(this.name, this.clock, 'shared-state-unavailable'),
            store,
            error,
          });
      },
    };
  }
}
