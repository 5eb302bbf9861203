import {
  assertDuration,
  assertFunction,
  assertInteger,
  assertObject,
  assertOneOf,
  type Backoff,
  type Clock,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
  systemClock,
} from '@stratus/core';
import { contextOf } from '../context.js';
import { BrokenCircuitError, IsolatedCircuitError } from '../errors.js';
import type { ExecuteOptions, FailureClassifier, Operation, Policy } from '../policy.js';
import { httpStatusOf, retryAfterMs } from '../transient.js';
import {
  type CircuitSync,
  type CircuitSyncHost,
  createCircuitSync,
  SharedCircuitFailure,
  type SharedCircuitOptions,
  type TrialOutcome,
} from './circuit-sync.js';
import type { SharedCircuitRecord } from './state-store.js';
import { createTripRule, type TripOption, type TripRule, type TripRuleState } from './trip-rule.js';

export type CircuitState = 'closed' | 'open' | 'half-open' | 'isolated';

/** Why the circuit changed state. */
export type CircuitTransitionReason =
  /** The trip rule's threshold was reached while closed. */
  | 'trip-rule'
  /** A failure carried Retry-After (HTTP 429/503): the server said when to come back. */
  | 'retry-after'
  /** The open period ran out: trial calls may go through. */
  | 'open-elapsed'
  /** A trial call failed in half-open. */
  | 'trial-failed'
  /** Enough trial calls succeeded in a row. */
  | 'trials-succeeded'
  | 'isolated'
  /** The last isolation handle was released. */
  | 'released'
  | 'reset'
  /** Taken over from the shared store (another instance changed the circuit). */
  | 'shared'
  /** Enough instances report failing (mode 'quorum'). */
  | 'quorum';

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

export interface HalfOpenOptions {
  /** Trial calls admitted at the same time while half-open (integer >= 1); the rest fail fast. Default 1. */
  maxConcurrent?: number;
  /** Trial successes in a row that close the circuit (integer >= 1). Default 1. */
  successesToClose?: number;
}

export interface RetryAfterOptions {
  /** HTTP statuses whose Retry-After opens the circuit; default [429, 503]. */
  statuses?: readonly number[];
  /** Cap on the open period a server can ask for; default 10 minutes. */
  maxMs?: number;
}

export interface CircuitBreakerOptions {
  /** When to open: a built-in rule, several (any trips), or a custom rule factory. Default: 5 failures in a row. */
  trip?: TripOption;
  /**
   * How long to stay open before admitting trial calls: fixed ms, or a Backoff whose `delay(n, previous)` is
   * used for the n-th consecutive opening (a close resets n). Default 5000.
   */
  openMs?: number | Backoff;
  halfOpen?: HalfOpenOptions;
  /** What counts as a failure. Default: every thrown error and no returned value. Cancellations never count. */
  handle?: FailureClassifier;
  /**
   * A failure carrying Retry-After (HTTP 429/503 by default) opens the circuit at once for at least that long
   * ("accelerated circuit breaking"). Default on; `false` turns it off.
   */
  retryAfter?: boolean | RetryAfterOptions;
  /** State exported by `exportState()`/`toJSON()` (e.g. by an earlier process) to start from. */
  initialState?: CircuitBreakerSnapshot;
  /** Share the circuit with other instances through a store (see SharedCircuitOptions). */
  shared?: SharedCircuitOptions;
  clock?: Clock;
  name?: string;
}

/** Plain-JSON breaker state, for `initialState`. Times are epoch ms so they survive a process restart. */
export interface CircuitBreakerSnapshot {
  readonly version: 1;
  /** Half-open is exported as open with `openUntil` = the export time, so a hydrated breaker probes at once. */
  readonly state: CircuitState;
  /** Epoch ms when an open circuit admits trial calls. */
  readonly openUntil?: number;
  /** Consecutive openings since the circuit last closed (drives a backoff of open periods). */
  readonly openCount: number;
  /** The open period used last (the `previous` of the next backoff delay). */
  readonly lastOpenMs: number;
  /** The trip rule's counters, when closed. */
  readonly rule?: TripRuleState;
}

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

// Numeric states keep the hot-path comparison a single integer check.
const CLOSED = 0;
const OPEN = 1;
const HALF_OPEN = 2;
const ISOLATED = 3;
type StateCode = 0 | 1 | 2 | 3;
const STATE_NAMES: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];
const STATE_CODES: Readonly<Record<CircuitState, StateCode>> = {
  closed: CLOSED,
  open: OPEN,
  'half-open': HALF_OPEN,
  isolated: ISOLATED,
};

// How a call ended, as far as the circuit is concerned.
const SUCCEEDED = 0;
const FAILED = 1;
const CANCELLED = 2;
type OutcomeKind = 0 | 1 | 2;

const DEFAULT_TRIP: TripOption = { kind: 'consecutive-failures', failures: 5 };
const DEFAULT_RETRY_AFTER_STATUSES: readonly number[] = [429, 503];
const DEFAULT_RETRY_AFTER_MAX_MS = 600_000;

class CircuitBreaker implements CircuitBreakerPolicy {
  readonly name: string;
  readonly events = new EventEmitter<CircuitBreakerEvent>();
  readonly #clock: Clock;
  readonly #rule: TripRule;
  readonly #needsDuration: boolean;
  readonly #timesSuccesses: boolean;
  readonly #openDelay: (attempt: number, previous: number) => number;
  readonly #maxTrials: number;
  readonly #successesToClose: number;
  readonly #isFailureError: ((error: unknown) => boolean) | undefined;
  readonly #isFailureResult: ((value: unknown) => boolean) | undefined;
  readonly #retryAfterStatuses: ReadonlySet<number> | undefined;
  readonly #retryAfterMaxMs: number;

  #state: StateCode = CLOSED;
  /** Bumped on every transition: outcomes of calls started in an earlier state are not applied. */
  #generation = 0;
  /** Monotonic ms at which an open circuit turns half-open. */
  #openUntil = 0;
  #openCount = 0;
  #lastOpenMs = 0;
  #trialsInFlight = 0;
  #trialSuccesses = 0;
  #isolations = 0;
  #lastFailure: unknown;
  readonly #sync: CircuitSync | undefined;
  readonly #storeKind: string;

  constructor(options: CircuitBreakerOptions) {
    assertObject('options', options as unknown);
    this.name = options.name ?? 'circuit-breaker';
    this.#clock = options.clock ?? systemClock;
    this.#rule = createTripRule(options.trip ?? DEFAULT_TRIP);
    this.#needsDuration = this.#rule.needsDuration;
    this.#timesSuccesses = this.#rule.timesSuccesses || this.#needsDuration;
    this.#openDelay = openDelayOf(options.openMs ?? 5000);

    const halfOpen = options.halfOpen ?? {};
    assertObject('halfOpen', halfOpen as unknown);
    this.#maxTrials = halfOpen.maxConcurrent ?? 1;
    this.#successesToClose = halfOpen.successesToClose ?? 1;
    assertInteger('halfOpen.maxConcurrent', this.#maxTrials, 1);
    assertInteger('halfOpen.successesToClose', this.#successesToClose, 1);

    const handle = options.handle ?? {};
    assertObject('handle', handle as unknown);
    if (handle.error !== undefined) assertFunction('handle.error', handle.error as unknown);
    if (handle.result !== undefined) assertFunction('handle.result', handle.result as unknown);
    this.#isFailureError = handle.error;
    this.#isFailureResult = handle.result;

    const retryAfter = options.retryAfter ?? true;
    if (retryAfter === false) {
      this.#retryAfterMaxMs = 0;
    } else {
      const settings = retryAfter === true ? {} : retryAfter;
      assertObject('retryAfter', settings as unknown);
      const statuses = settings.statuses ?? DEFAULT_RETRY_AFTER_STATUSES;
      if (!Array.isArray(statuses)) throw new InvalidOptionsError('retryAfter.statuses', 'expected an array');
      statuses.forEach((s, i) => {
        assertInteger(`retryAfter.statuses[${i}]`, s, 100, 599);
      });
      this.#retryAfterStatuses = new Set(statuses);
      this.#retryAfterMaxMs = settings.maxMs ?? DEFAULT_RETRY_AFTER_MAX_MS;
      assertDuration('retryAfter.maxMs', this.#retryAfterMaxMs);
    }

    if (options.initialState !== undefined) this.#restore(options.initialState);
    this.#storeKind = options.shared?.store?.kind ?? '';
    if (options.shared !== undefined) {
      this.#sync = createCircuitSync(options.shared, this.#syncHost(), {
        maxTrials: this.#maxTrials,
        successesToClose: this.#successesToClose,
        named: options.name !== undefined,
      });
    }
  }

  get state(): CircuitState {
    this.#refresh();
    return STATE_NAMES[this.#state]!;
  }

  get lastFailure(): unknown {
    return this.#lastFailure;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    return this.#state === CLOSED ? this.#run(operation, options) : this.#guarded(operation, options);
  }

  isolate(): () => void {
    if (this.#state !== ISOLATED) {
      this.#transition(ISOLATED, 'isolated');
      this.#isolations = 0;
    }
    this.#isolations++;
    // A handle only counts for the isolation it was given in: after reset() or a later isolation it is inert.
    const generation = this.#generation;
    let released = false;
    return () => {
      if (released || generation !== this.#generation) return;
      released = true;
      if (--this.#isolations === 0) this.#transition(CLOSED, 'released');
    };
  }

  reset(): void {
    // Closing from closed still forgets the trip rule's counters, without a state-change event.
    if (this.#state === CLOSED) this.#rule.reset();
    else this.#transition(CLOSED, 'reset');
  }

  toJSON(): CircuitBreakerSnapshot {
    return this.exportState();
  }

  get sharedStateAvailable(): boolean | undefined {
    return this.#sync?.available;
  }

  async sync(): Promise<void> {
    await this.#sync?.sync();
  }

  async dispose(): Promise<void> {
    await this.#sync?.dispose();
  }

  exportState(): CircuitBreakerSnapshot {
    const now = this.#clock.now();
    const mono = this.#clock.monotonic();
    const base = { version: 1 as const, openCount: this.#openCount, lastOpenMs: this.#lastOpenMs };
    switch (this.#state) {
      case CLOSED:
        return { ...base, state: 'closed', rule: this.#rule.exportState(mono) };
      case OPEN:
        return { ...base, state: 'open', openUntil: now + Math.max(0, this.#openUntil - mono) };
      case HALF_OPEN:
        return { ...base, state: 'open', openUntil: now };
      default:
        return { ...base, state: 'isolated' };
    }
  }

  /** Runs `operation` in the current state: closed, or as an admitted half-open trial. */
  async #run<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    const generation = this.#generation;
    if (isCancelled(source)) {
      // A half-open call holds a trial slot (a shared trial whose caller gave up while the store answered).
      this.#settleCancelled(generation);
      throw new OperationCancelledError(cancelReasonOf(source));
    }
    const start = this.#needsDuration ? this.#clock.monotonic() : 0;
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
        this.#settle(kind, error, generation, start);
      }
      throw error;
    }
    try {
      kind = this.#isFailureResult?.(value) ? FAILED : SUCCEEDED;
    } finally {
      this.#settle(kind, value, generation, start);
    }
    return value;
  }

  /** Every state but closed: reject, or admit a trial call. */
  async #guarded<T>(operation: Operation<T>, source: ExecuteOptions | undefined): Promise<T> {
    if (isCancelled(source)) throw new OperationCancelledError(cancelReasonOf(source));
    this.#refresh();
    const state = this.#state;
    if (state === CLOSED) return this.#run(operation, source);
    if (state === HALF_OPEN && this.#trialsInFlight < this.#maxTrials) {
      // Taken synchronously, before any await: concurrent callers can never exceed the trial slots.
      this.#trialsInFlight++;
      const sync = this.#sync;
      return sync?.acquireTrial && sync.available
        ? this.#sharedTrial(operation, source, sync)
        : this.#run(operation, source);
    }
    throw this.#rejection(state);
  }

  /** A half-open trial whose slot is leased from the shared store, so trials are bounded cluster-wide. */
  async #sharedTrial<T>(
    operation: Operation<T>,
    source: ExecuteOptions | undefined,
    sync: CircuitSync,
  ): Promise<T> {
    const generation = this.#generation;
    const admission = await (sync.acquireTrial as NonNullable<CircuitSync['acquireTrial']>)();
    const unchanged = generation === this.#generation;
    if (admission.kind === 'unavailable' && unchanged) return this.#run(operation, source);
    if (admission.kind !== 'granted') {
      if (unchanged) this.#trialsInFlight--;
      // The store's answer has been adopted: closed runs the call, anything else refuses it.
      if (this.#state === CLOSED) return this.#run(operation, source);
      throw this.#rejection(this.#state);
    }
    const start = this.#needsDuration ? this.#clock.monotonic() : 0;
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
        ? { kind: 'failure', failure: outcome, retryAfterMs: this.#retryAfterOf(outcome) }
        : { kind: kind === CANCELLED ? 'cancelled' : 'success' };
    const stored = await (sync.completeTrial as NonNullable<CircuitSync['completeTrial']>)(lease, report);
    if (!stored) {
      this.#settle(kind, outcome, generation, start);
      return;
    }
    // The store decided and its record was adopted; what is left is this call's slot, its failure and events.
    if (generation === this.#generation) this.#trialsInFlight--;
    if (kind === FAILED) this.#lastFailure = outcome;
    if (kind !== CANCELLED && this.events.active) {
      const durationMs = this.#needsDuration ? this.#clock.monotonic() - start : undefined;
      this.#emitOutcome(kind, outcome, HALF_OPEN, durationMs);
    }
  }

  /** What an error means for the circuit: a cancellation by the caller never counts. */
  #failureKind(error: unknown, source: ExecuteOptions | undefined): OutcomeKind {
    if (error instanceof OperationCancelledError || (isCancelled(source) && error === cancelReasonOf(source)))
      return CANCELLED;
    return this.#isFailureError === undefined || this.#isFailureError(error) ? FAILED : SUCCEEDED;
  }

  #settle(kind: OutcomeKind, outcome: unknown, generation: number, start: number): void {
    if (kind === FAILED) this.#settleFailure(outcome, generation, start);
    else if (kind === SUCCEEDED) this.#settleSuccess(generation, start);
    else this.#settleCancelled(generation);
  }

  #settleSuccess(generation: number, start: number): void {
    const state = this.#state;
    let durationMs: number | undefined;
    if (generation === this.#generation) {
      if (state === CLOSED) {
        if (this.#timesSuccesses) {
          const now = this.#clock.monotonic();
          if (this.#needsDuration) durationMs = now - start;
          if (this.#rule.success(now, now - start)) this.#open('trip-rule', undefined, 0, now);
        } else {
          this.#rule.success(0, 0);
        }
      } else if (state === HALF_OPEN) {
        this.#trialsInFlight--;
        if (++this.#trialSuccesses >= this.#successesToClose) this.#transition(CLOSED, 'trials-succeeded');
      }
    }
    if (this.events.active) this.#emitOutcome(SUCCEEDED, undefined, state, durationMs);
  }

  #settleFailure(failure: unknown, generation: number, start: number): void {
    const state = this.#state;
    const now = this.#clock.monotonic();
    this.#lastFailure = failure;
    if (generation === this.#generation) {
      const retryAfter = this.#retryAfterOf(failure);
      if (state === CLOSED) {
        const tripped = this.#rule.failure(now, now - start);
        if (retryAfter > 0) this.#open('retry-after', failure, retryAfter, now);
        else if (tripped) this.#open('trip-rule', failure, 0, now);
      } else if (state === HALF_OPEN) {
        this.#open('trial-failed', failure, retryAfter, now);
      }
    }
    if (this.events.active) {
      this.#emitOutcome(FAILED, failure, state, this.#needsDuration ? now - start : undefined);
    }
  }

  #emitOutcome(kind: OutcomeKind, outcome: unknown, state: StateCode, durationMs: number | undefined): void {
    const name = STATE_NAMES[state]!;
    if (kind === FAILED) {
      this.events.emit({ ...this.#eventBase('failure'), state: name, failure: outcome, durationMs });
    } else {
      this.events.emit({ ...this.#eventBase('success'), state: name, durationMs });
    }
  }

  /** The caller gave up: the call says nothing about the dependency, but it frees its trial slot. */
  #settleCancelled(generation: number): void {
    if (generation === this.#generation && this.#state === HALF_OPEN) this.#trialsInFlight--;
  }

  /** Ms a failure's Retry-After asks us to stay open for (0: none, or not a status we honour). */
  #retryAfterOf(failure: unknown): number {
    const statuses = this.#retryAfterStatuses;
    if (statuses === undefined) return 0;
    const status = httpStatusOf(failure);
    if (status === undefined || !statuses.has(status)) return 0;
    const ms = retryAfterMs(failure, this.#clock.now());
    return ms === undefined ? 0 : Math.min(ms, this.#retryAfterMaxMs);
  }

  #open(
    reason: CircuitTransitionReason,
    failure: unknown,
    minimumMs: number,
    now: number,
    fromSync = false,
  ): void {
    const delay = this.#openDelay(++this.#openCount, this.#lastOpenMs);
    this.#lastOpenMs = delay;
    this.#openUntil = now + Math.max(delay, minimumMs);
    this.#transition(OPEN, reason, failure, fromSync);
  }

  /** Lazily turns an open circuit half-open once its period ran out (no timer needed). */
  #refresh(): void {
    if (this.#state === OPEN && this.#clock.monotonic() >= this.#openUntil) {
      this.#transition(HALF_OPEN, 'open-elapsed');
    }
  }

  /** Changes state; `fromSync` marks changes taken over from the shared store, which are not shared back. */
  #transition(to: StateCode, reason: CircuitTransitionReason, failure?: unknown, fromSync = false): void {
    const from = this.#state;
    this.#state = to;
    this.#generation++;
    if (to === CLOSED) {
      this.#rule.reset();
      this.#openCount = 0;
      this.#lastOpenMs = 0;
    } else if (to === HALF_OPEN) {
      this.#trialsInFlight = 0;
      this.#trialSuccesses = 0;
    }
    if (this.events.active) {
      this.events.emit({
        ...this.#eventBase('state-change'),
        from: STATE_NAMES[from]!,
        to: STATE_NAMES[to]!,
        reason,
        lastFailure: to === OPEN ? failure : undefined,
      });
    }
    if (this.#sync !== undefined && !fromSync) {
      this.#sync.transitioned({
        to: STATE_NAMES[to]!,
        reason,
        openUntil: this.#wallTime(this.#openUntil),
        openCount: this.#openCount,
        lastOpenMs: this.#lastOpenMs,
        failure,
      });
    }
  }

  /**
   * A monotonic time as wall time, and back. Both clocks are read as a pair within one millisecond of wall time, so a
   * pause between the two reads (a busy host) cannot shift the result: instances sharing a breaker agree on its
   * open-until time.
   */
  #wallTime(monotonic: number): number {
    const [wall, mono] = this.#clockPair();
    return wall + Math.max(0, monotonic - mono);
  }

  #monotonicTime(wall: number): number {
    const [now, mono] = this.#clockPair();
    return mono + (wall - now);
  }

  #clockPair(): [wall: number, monotonic: number] {
    for (let attempt = 0; ; attempt++) {
      const wall = this.#clock.now();
      const mono = this.#clock.monotonic();
      if (this.#clock.now() === wall || attempt === 3) return [wall, mono];
    }
  }

  /** Takes over the shared record: its state, open-until time, backoff position and trial successes. */
  #adopt(record: SharedCircuitRecord, reason: CircuitTransitionReason): void {
    const target = STATE_CODES[record.state];
    if (target === undefined) return;
    const mono = this.#clock.monotonic();
    const openUntil = this.#monotonicTime(record.openUntil);
    const current = this.#state;
    // An elapsed open period already reads as half-open here; the store follows at the first trial.
    if (target === OPEN && current === HALF_OPEN && openUntil <= mono) return;
    this.#openCount = record.openCount;
    this.#lastOpenMs = record.lastOpenMs;
    if (target === OPEN || target === HALF_OPEN) this.#openUntil = openUntil;
    if (target !== current) {
      let failure: unknown;
      if (target === OPEN && record.lastFailure !== undefined) {
        failure =
          reason === 'shared'
            ? new SharedCircuitFailure(record.lastFailure, record.updatedBy)
            : this.#lastFailure;
        this.#lastFailure = failure;
      }
      this.#transition(target, reason, failure, true);
      if (target === ISOLATED) this.#isolations = 0;
    }
    if (target === HALF_OPEN) this.#trialSuccesses = record.successes;
  }

  #syncHost(): CircuitSyncHost {
    return {
      name: this.name,
      clock: this.#clock,
      adopt: (record, reason) => this.#adopt(record, reason),
      openByQuorum: () => {
        if (this.#state === CLOSED) this.#open('quorum', undefined, 0, this.#clock.monotonic(), true);
      },
      openDelay: this.#openDelay,
      storeAvailabilityChanged: (available, error) => {
        if (!this.events.active) return;
        const store = this.#storeKind;
        if (available) this.events.emit({ ...this.#eventBase('shared-state-restored'), store });
        else this.events.emit({ ...this.#eventBase('shared-state-unavailable'), store, error });
      },
    };
  }

  #rejection(state: StateCode): BrokenCircuitError {
    if (this.events.active) this.events.emit({ ...this.#eventBase('rejected'), state: STATE_NAMES[state]! });
    if (state === ISOLATED) return new IsolatedCircuitError(this.#lastFailure);
    const now = this.#clock.now();
    if (state === HALF_OPEN) {
      return new BrokenCircuitError(
        `Circuit "${this.name}" is half-open and its ${this.#maxTrials} trial slot(s) are taken`,
        this.#lastFailure,
        now,
      );
    }
    const retryAt = this.#wallTime(this.#openUntil);
    return new BrokenCircuitError(
      `Circuit "${this.name}" is open until ${new Date(retryAt).toISOString()}`,
      this.#lastFailure,
      retryAt,
    );
  }

  #eventBase<T extends CircuitBreakerEvent['type']>(type: T) {
    return { component: 'circuit-breaker', name: this.name, type, at: this.#clock.now() } as const;
  }

  #restore(snapshot: CircuitBreakerSnapshot): void {
    assertObject('initialState', snapshot as unknown);
    if (snapshot.version !== 1) {
      throw new InvalidOptionsError('initialState.version', `expected 1, got ${String(snapshot.version)}`);
    }
    assertOneOf('initialState.state', snapshot.state, STATE_NAMES);
    assertInteger('initialState.openCount', snapshot.openCount, 0);
    assertDuration('initialState.lastOpenMs', snapshot.lastOpenMs);
    this.#openCount = snapshot.openCount;
    this.#lastOpenMs = snapshot.lastOpenMs;
    const mono = this.#clock.monotonic();
    if (snapshot.state === 'closed') {
      if (snapshot.rule) this.#rule.restoreState(snapshot.rule, mono);
    } else if (snapshot.state === 'isolated') {
      // An isolation outlives the process that made it; only reset() ends it (no release handle exists).
      this.#state = ISOLATED;
      this.#isolations = 1;
    } else {
      const openUntil = snapshot.openUntil ?? this.#clock.now();
      assertDuration('initialState.openUntil', openUntil);
      this.#state = OPEN;
      this.#openUntil = mono + (openUntil - this.#clock.now());
    }
  }
}

function openDelayOf(option: number | Backoff): (attempt: number, previous: number) => number {
  if (typeof option === 'number') {
    assertDuration('openMs', option);
    return () => option;
  }
  assertObject('openMs', option as unknown);
  assertFunction('openMs.delay', option.delay as unknown);
  return (attempt, previous) => option.delay(attempt, previous);
}
