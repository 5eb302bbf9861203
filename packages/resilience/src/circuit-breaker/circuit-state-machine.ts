// The circuit's state machine: its state and counters, and the transitions that outcomes, time and the store make.
import { type Clock, EventEmitter } from '@stratus/core';
import { BrokenCircuitError, IsolatedCircuitError } from '../errors.js';
import { type CircuitSettings, retryAfterOf } from './circuit-breaker-options.js';
import { type CircuitBreakerEvent, eventBase } from './circuit-events.js';
import {
  type CircuitBreakerSnapshot,
  checkSnapshot,
  restoredOpenUntil,
  snapshotOf,
} from './circuit-snapshot.js';
import {
  CANCELLED,
  type CircuitTransitionReason,
  CLOSED,
  FAILED,
  HALF_OPEN,
  ISOLATED,
  OPEN,
  type OutcomeKind,
  STATE_CODES,
  STATE_NAMES,
  type StateCode,
  SUCCEEDED,
} from './circuit-state.js';
import { type CircuitSync, SharedCircuitFailure } from './circuit-sync.js';
import type { SharedCircuitRecord } from './state-store.js';
import type { TripRule } from './trip-rule.js';
import { monotonicTimeOf, wallTimeOf } from './wall-time.js';

/**
 * The breaker's state and its transitions; the breaker (circuit-breaker.ts) runs calls through it. The fields the
 * call path reads on every call are protected, not private, so that path reads them without a method call.
 */
export abstract class CircuitStateMachine {
  readonly name: string;
  readonly events = new EventEmitter<CircuitBreakerEvent>();
  protected readonly clock: Clock;
  protected readonly settings: CircuitSettings;
  protected readonly needsDuration: boolean;
  readonly #rule: TripRule;
  readonly #timesSuccesses: boolean;

  protected code: StateCode = CLOSED;
  /** Bumped on every transition: outcomes of calls started in an earlier state are not applied. */
  protected generation = 0;
  protected trialsInFlight = 0;
  /** Monotonic ms at which an open circuit turns half-open. */
  #openUntil = 0;
  #openCount = 0;
  #lastOpenMs = 0;
  #trialSuccesses = 0;
  #isolations = 0;
  #lastFailure: unknown;
  /** With `shared`: where transitions made here are shared (set by the breaker once it is built). */
  protected shared: CircuitSync | undefined;

  constructor(settings: CircuitSettings, initialState: CircuitBreakerSnapshot | undefined) {
    this.name = settings.name;
    this.clock = settings.clock;
    this.settings = settings;
    this.#rule = settings.rule;
    this.needsDuration = settings.rule.needsDuration;
    this.#timesSuccesses = settings.rule.timesSuccesses || this.needsDuration;
    if (initialState !== undefined) this.#restore(initialState);
  }

  get lastFailure(): unknown {
    return this.#lastFailure;
  }

  isolate(): () => void {
    if (this.code !== ISOLATED) {
      this.#transition(ISOLATED, 'isolated');
      this.#isolations = 0;
    }
    this.#isolations++;
    // A handle only counts for the isolation it was given in: after reset() or a later isolation it is inert.
    const generation = this.generation;
    let released = false;
    return () => {
      if (released || generation !== this.generation) return;
      released = true;
      if (--this.#isolations === 0) this.#transition(CLOSED, 'released');
    };
  }

  reset(): void {
    // Closing from closed still forgets the trip rule's counters, without a state-change event.
    if (this.code === CLOSED) this.#rule.reset();
    else this.#transition(CLOSED, 'reset');
  }

  exportState(): CircuitBreakerSnapshot {
    return snapshotOf(this.code, this.#openUntil, this.#openCount, this.#lastOpenMs, this.#rule, this.clock);
  }

  protected settle(kind: OutcomeKind, outcome: unknown, generation: number, start: number): void {
    if (kind === FAILED) this.#settleFailure(outcome, generation, start);
    else if (kind === SUCCEEDED) this.#settleSuccess(generation, start);
    else this.settleCancelled(generation);
  }

  #settleSuccess(generation: number, start: number): void {
    const state = this.code;
    let durationMs: number | undefined;
    if (generation === this.generation) {
      if (state === CLOSED) {
        if (this.#timesSuccesses) {
          const now = this.clock.monotonic();
          if (this.needsDuration) durationMs = now - start;
          if (this.#rule.success(now, now - start)) this.open('trip-rule', undefined, 0, now);
        } else {
          this.#rule.success(0, 0);
        }
      } else if (state === HALF_OPEN) {
        this.trialsInFlight--;
        if (++this.#trialSuccesses >= this.settings.successesToClose)
          this.#transition(CLOSED, 'trials-succeeded');
      }
    }
    if (this.events.active) this.#emitOutcome(SUCCEEDED, undefined, state, durationMs);
  }

  #settleFailure(failure: unknown, generation: number, start: number): void {
    const state = this.code;
    const now = this.clock.monotonic();
    this.#lastFailure = failure;
    if (generation === this.generation) {
      const retryAfter = retryAfterOf(failure, this.settings.retryAfter, this.clock);
      if (state === CLOSED) {
        const tripped = this.#rule.failure(now, now - start);
        if (retryAfter > 0) this.open('retry-after', failure, retryAfter, now);
        else if (tripped) this.open('trip-rule', failure, 0, now);
      } else if (state === HALF_OPEN) {
        this.open('trial-failed', failure, retryAfter, now);
      }
    }
    if (this.events.active) {
      this.#emitOutcome(FAILED, failure, state, this.needsDuration ? now - start : undefined);
    }
  }

  #emitOutcome(kind: OutcomeKind, outcome: unknown, state: StateCode, durationMs: number | undefined): void {
    const name = STATE_NAMES[state]!;
    if (kind === FAILED) {
      this.events.emit({
        ...eventBase(this.name, this.clock, 'failure'),
        state: name,
        failure: outcome,
        durationMs,
      });
    } else {
      this.events.emit({ ...eventBase(this.name, this.clock, 'success'), state: name, durationMs });
    }
  }

  /** The caller gave up: the call says nothing about the dependency, but it frees its trial slot. */
  protected settleCancelled(generation: number): void {
    if (generation === this.generation && this.code === HALF_OPEN) this.trialsInFlight--;
  }

  /** A shared trial the store decided (its record adopted): what is left is the call's slot, failure and events. */
  protected trialStored(kind: OutcomeKind, outcome: unknown, generation: number, start: number): void {
    if (generation === this.generation) this.trialsInFlight--;
    if (kind === FAILED) this.#lastFailure = outcome;
    if (kind !== CANCELLED && this.events.active) {
      const durationMs = this.needsDuration ? this.clock.monotonic() - start : undefined;
      this.#emitOutcome(kind, outcome, HALF_OPEN, durationMs);
    }
  }

  protected open(
    reason: CircuitTransitionReason,
    failure: unknown,
    minimumMs: number,
    now: number,
    fromSync = false,
  ): void {
    const delay = this.settings.openDelay(++this.#openCount, this.#lastOpenMs);
    this.#lastOpenMs = delay;
    this.#openUntil = now + Math.max(delay, minimumMs);
    this.#transition(OPEN, reason, failure, fromSync);
  }

  /** Lazily turns an open circuit half-open once its period ran out (no timer needed). */
  protected refresh(): void {
    if (this.code === OPEN && this.clock.monotonic() >= this.#openUntil) {
      this.#transition(HALF_OPEN, 'open-elapsed');
    }
  }

  /** Changes state; `fromSync` marks changes taken over from the shared store, which are not shared back. */
  #transition(to: StateCode, reason: CircuitTransitionReason, failure?: unknown, fromSync = false): void {
    const from = this.code;
    this.code = to;
    this.generation++;
    if (to === CLOSED) {
      this.#rule.reset();
      this.#openCount = 0;
      this.#lastOpenMs = 0;
    } else if (to === HALF_OPEN) {
      this.trialsInFlight = 0;
      this.#trialSuccesses = 0;
    }
    if (this.events.active) {
      this.events.emit({
        ...eventBase(this.name, this.clock, 'state-change'),
        from: STATE_NAMES[from]!,
        to: STATE_NAMES[to]!,
        reason,
        lastFailure: to === OPEN ? failure : undefined,
      });
    }
    if (this.shared !== undefined && !fromSync) {
      this.shared.transitioned({
        to: STATE_NAMES[to]!,
        reason,
        openUntil: wallTimeOf(this.clock, this.#openUntil),
        openCount: this.#openCount,
        lastOpenMs: this.#lastOpenMs,
        failure,
      });
    }
  }

  /** Takes over the shared record: its state, open-until time, backoff position and trial successes. */
  protected adopt(record: SharedCircuitRecord, reason: CircuitTransitionReason): void {
    const target = STATE_CODES[record.state];
    if (target === undefined) return;
    const mono = this.clock.monotonic();
    const openUntil = monotonicTimeOf(this.clock, record.openUntil);
    const current = this.code;
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

  protected rejection(state: StateCode): BrokenCircuitError {
    if (this.events.active)
      this.events.emit({ ...eventBase(this.name, this.clock, 'rejected'), state: STATE_NAMES[state]! });
    if (state === ISOLATED) return new IsolatedCircuitError(this.#lastFailure);
    const now = this.clock.now();
    if (state === HALF_OPEN) {
      return new BrokenCircuitError(
        `Circuit "${this.name}" is half-open and its ${this.settings.maxTrials} trial slot(s) are taken`,
        this.#lastFailure,
        now,
      );
    }
    const retryAt = wallTimeOf(this.clock, this.#openUntil);
    return new BrokenCircuitError(
      `Circuit "${this.name}" is open until ${new Date(retryAt).toISOString()}`,
      this.#lastFailure,
      retryAt,
    );
  }

  #restore(snapshot: CircuitBreakerSnapshot): void {
    checkSnapshot(snapshot);
    this.#openCount = snapshot.openCount;
    this.#lastOpenMs = snapshot.lastOpenMs;
    if (snapshot.state === 'closed') {
      if (snapshot.rule) this.#rule.restoreState(snapshot.rule, this.clock.monotonic());
    } else if (snapshot.state === 'isolated') {
      // An isolation outlives the process that made it; only reset() ends it (no release handle exists).
      this.code = ISOLATED;
      this.#isolations = 1;
    } else {
      this.#openUntil = restoredOpenUntil(snapshot, this.clock);
      this.code = OPEN;
    }
  }
}
