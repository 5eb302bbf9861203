import { assertInteger } from '@stratus/core';
import type { TripRule, TripRuleState } from './trip-rule.js';

export interface ConsecutiveFailuresOptions {
  readonly kind: 'consecutive-failures';
  /** Failures in a row that open the circuit (integer >= 1). Any success starts the count again. */
  readonly failures: number;
}

/** Opens after N failures in a row. Costs one assignment per success and reads no clock. */
export class ConsecutiveFailuresRule implements TripRule {
  readonly timesSuccesses = false;
  readonly needsDuration = false;
  readonly #threshold: number;
  #count = 0;

  constructor(options: ConsecutiveFailuresOptions, path = '') {
    assertInteger(`${path}failures`, options.failures, 1);
    this.#threshold = options.failures;
  }

  success(): boolean {
    this.#count = 0;
    return false;
  }

  failure(): boolean {
    return ++this.#count >= this.#threshold;
  }

  reset(): void {
    this.#count = 0;
  }

  exportState(): TripRuleState {
    return { kind: 'consecutive-failures', count: this.#count };
  }

  restoreState(state: TripRuleState): void {
    if (state.kind === 'consecutive-failures' && typeof state.count === 'number') this.#count = state.count;
  }
}
