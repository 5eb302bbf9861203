import { InvalidOptionsError } from '@stratus/core';
import { type ConsecutiveFailuresOptions, ConsecutiveFailuresRule } from './consecutive-failures.js';
import { type FailureCountOptions, FailureCountRule } from './failure-count.js';
import { type FailureRatioOptions, FailureRatioRule } from './failure-ratio.js';
import { type SlowCallRatioOptions, SlowCallRatioRule } from './slow-call-ratio.js';

/** Exported counters of a rule, for hydration (plain JSON). */
export type TripRuleState = { readonly kind: string } & Readonly<Record<string, unknown>>;

/**
 * Decides, from the outcomes of calls made while the circuit is closed, when it should open. One instance
 * belongs to one breaker (it holds counters). Times are the breaker clock's monotonic milliseconds.
 */
export interface TripRule {
  /** The rule reads `now` on successes too (windowed rules); otherwise the breaker skips the clock read. */
  readonly timesSuccesses: boolean;
  /** The rule needs each call's duration (slow-call rules); the breaker then reads the clock at the start. */
  readonly needsDuration: boolean;
  /** Records a success; true means "open now" (a slow-call rule can open on successes). */
  success(now: number, durationMs: number): boolean;
  /** Records a failure; true means "open now". */
  failure(now: number, durationMs: number): boolean;
  /** Forgets everything (the circuit closed again). */
  reset(): void;
  exportState(now: number): TripRuleState;
  /** Restores counters exported by a rule of the same kind; anything else is ignored. */
  restoreState(state: TripRuleState, now: number): void;
}

/** The built-in rules, chosen by `kind`. An array trips when any of its rules does. */
export type TripRuleOptions =
  | ConsecutiveFailuresOptions
  | FailureCountOptions
  | FailureRatioOptions
  | SlowCallRatioOptions;

/** What the `trip` option accepts: a built-in rule, several (any trips), or a factory of a custom rule. */
export type TripOption = TripRuleOptions | readonly TripRuleOptions[] | (() => TripRule);

export function createTripRule(option: TripOption, path = 'trip'): TripRule {
  if (typeof option === 'function') return option();
  if (Array.isArray(option)) {
    if (option.length === 0) throw new InvalidOptionsError(path, 'expected at least one rule');
    const rules = option.map((o: TripRuleOptions, i) => createTripRule(o, `${path}[${i}]`));
    return rules.length === 1 ? rules[0]! : new AnyTripRule(rules);
  }
  const rule = option as TripRuleOptions;
  if (typeof rule !== 'object' || rule === null) {
    throw new InvalidOptionsError(path, 'expected a rule object, an array of rules or a function');
  }
  switch (rule.kind) {
    case 'consecutive-failures':
      return new ConsecutiveFailuresRule(rule, `${path}.`);
    case 'failure-count':
      return new FailureCountRule(rule, `${path}.`);
    case 'failure-ratio':
      return new FailureRatioRule(rule, `${path}.`);
    case 'slow-call-ratio':
      return new SlowCallRatioRule(rule, `${path}.`);
    default:
      throw new InvalidOptionsError(
        `${path}.kind`,
        `expected "consecutive-failures", "failure-count", "failure-ratio" or "slow-call-ratio", got ${JSON.stringify((rule as { kind?: unknown }).kind)}`,
      );
  }
}

/** Several rules over the same calls: every rule sees every outcome, and the circuit opens if any says so. */
class AnyTripRule implements TripRule {
  readonly timesSuccesses: boolean;
  readonly needsDuration: boolean;
  readonly #rules: readonly TripRule[];

  constructor(rules: readonly TripRule[]) {
    this.#rules = rules;
    this.timesSuccesses = rules.some((r) => r.timesSuccesses);
    this.needsDuration = rules.some((r) => r.needsDuration);
  }

  success(now: number, durationMs: number): boolean {
    let trip = false;
    for (const rule of this.#rules) trip = rule.success(now, durationMs) || trip;
    return trip;
  }

  failure(now: number, durationMs: number): boolean {
    let trip = false;
    for (const rule of this.#rules) trip = rule.failure(now, durationMs) || trip;
    return trip;
  }

  reset(): void {
    for (const rule of this.#rules) rule.reset();
  }

  exportState(now: number): TripRuleState {
    return { kind: 'any', rules: this.#rules.map((r) => r.exportState(now)) };
  }

  restoreState(state: TripRuleState, now: number): void {
    const states = state.kind === 'any' && Array.isArray(state.rules) ? state.rules : [];
    this.#rules.forEach((rule, i) => {
      const s = states[i] as TripRuleState | undefined;
      if (s) rule.restoreState(s, now);
    });
  }
}
