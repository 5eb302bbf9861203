import { assertInteger, assertRatio } from '@stratus/core';
import { WindowedRule } from './windowed-rule.js';

export interface FailureRatioOptions {
  readonly kind: 'failure-ratio';
  /** Share of failed calls in the window that opens the circuit, in (0, 1]. */
  readonly ratio: number;
  /** The sampling window in ms. */
  readonly windowMs: number;
  /** Calls the window must hold before the ratio is trusted (integer >= 1); default 10. */
  readonly minThroughput?: number;
  readonly buckets?: number;
}

/** Opens when failures / calls within the window reach `ratio`, once the window holds `minThroughput` calls. */
export class FailureRatioRule extends WindowedRule {
  readonly #ratio: number;
  readonly #minThroughput: number;

  constructor(options: FailureRatioOptions, path = '') {
    super('failure-ratio', options, path);
    assertRatio(`${path}ratio`, options.ratio, { exclusiveMin: true });
    const minThroughput = options.minThroughput ?? 10;
    assertInteger(`${path}minThroughput`, minThroughput, 1);
    this.#ratio = options.ratio;
    this.#minThroughput = minThroughput;
  }

  success(now: number): boolean {
    this.window.record(now, false, false);
    return false;
  }

  failure(now: number): boolean {
    this.window.record(now, true, false);
    const { calls, failures } = this.window.totals;
    return calls >= this.#minThroughput && failures >= this.#ratio * calls;
  }
}
