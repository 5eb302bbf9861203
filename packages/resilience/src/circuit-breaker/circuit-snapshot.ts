// The breaker's state as plain JSON (exportState, initialState): its shape, and the conversions both ways.
import {
  assertDuration,
  assertInteger,
  assertObject,
  assertOneOf,
  type Clock,
  InvalidOptionsError,
} from '@stratus/core';
import { type CircuitState, CLOSED, HALF_OPEN, OPEN, STATE_NAMES, type StateCode } from './circuit-state.js';
import type { TripRule, TripRuleState } from './trip-rule.js';

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

/** The snapshot of a breaker in `state`; `openUntil` is monotonic ms, as the breaker keeps it. */
export function snapshotOf(
  state: StateCode,
  openUntil: number,
  openCount: number,
  lastOpenMs: number,
  rule: TripRule,
  clock: Clock,
): CircuitBreakerSnapshot {
  const now = clock.now();
  const mono = clock.monotonic();
  const base = { version: 1 as const, openCount, lastOpenMs };
  switch (state) {
    case CLOSED:
      return { ...base, state: 'closed', rule: rule.exportState(mono) };
    case OPEN:
      return { ...base, state: 'open', openUntil: now + Math.max(0, openUntil - mono) };
    case HALF_OPEN:
      return { ...base, state: 'open', openUntil: now };
    default:
      return { ...base, state: 'isolated' };
  }
}

/** Checks the fields every snapshot has (`initialState`). */
export function checkSnapshot(snapshot: CircuitBreakerSnapshot): void {
  assertObject('initialState', snapshot as unknown);
  if (snapshot.version !== 1) {
    throw new InvalidOptionsError('initialState.version', `expected 1, got ${String(snapshot.version)}`);
  }
  assertOneOf('initialState.state', snapshot.state, STATE_NAMES);
  assertInteger('initialState.openCount', snapshot.openCount, 0);
  assertDuration('initialState.lastOpenMs', snapshot.lastOpenMs);
}

/** When an open snapshot's circuit admits trials, as monotonic ms of `clock`. */
export function restoredOpenUntil(snapshot: CircuitBreakerSnapshot, clock: Clock): number {
  const openUntil = snapshot.openUntil ?? clock.now();
  assertDuration('initialState.openUntil', openUntil);
  return clock.monotonic() + (openUntil - clock.now());
}
