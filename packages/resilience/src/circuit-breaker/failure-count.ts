import { assertInteger } from '@stratus/core';
import { WindowedRule } from './windowed-rule.js';

export interface FailureCountOptions {
  readonly kind: 'failure-count';
  /** Failures within the window that open the circuit (integer >= 1). */
  readonly failures: number;
  /** The rolling window in ms; failures older than this no longer count. */
  readonly windowMs: number;
  /** Buckets the window is split into; default 10 (failures age out a tenth of the window at a time). */
  readonly buckets?: number;
}

/**
 * Opens when at least N failures happened within the last T ms: the catalogue's time-based failure counter,
 * so sporadic failures spread over a long period never add up to a trip.
 */
export class FailureCountRule extends WindowedRule {
  override readonly timesSuccesses = false;
  readonly #threshold: number;

  constructor(options: FailureCountOptions, path = '') {
    super('failure-count', options, path);
    assertInteger(`${path}failures`, options.failures, 1);
    this.#threshold = options.failures;
  }

  success(): boolean {
    return false;
  }

  failure(now: number): boolean {
    this.window.record(now, true, false);
    return this.window.totals.failures >= this.#threshold;
  }
}
