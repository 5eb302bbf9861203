import { assertDuration, assertInteger, assertRatio } from '@stratus/core';
import { WindowedRule } from './windowed-rule.js';

export interface SlowCallRatioOptions {
  readonly kind: 'slow-call-ratio';
  /** A call that takes longer than this (ms) is slow, whether it succeeded or failed. */
  readonly slowCallMs: number;
  /** Share of slow calls in the window that opens the circuit, in (0, 1]. */
  readonly ratio: number;
  readonly windowMs: number;
  /** Calls the window must hold before the ratio is trusted (integer >= 1); default 10. */
  readonly minThroughput?: number;
  readonly buckets?: number;
}

/**
 * Opens when slow calls / calls within the window reach `ratio` (resilience4j's slow-call rate): a
 * dependency that answers, but too late, is treated as failing before timeouts pile up.
 */
export class SlowCallRatioRule extends WindowedRule {
  override readonly needsDuration = true;
  readonly #slowCallMs: number;
  readonly #ratio: number;
  readonly #minThroughput: number;

  constructor(options: SlowCallRatioOptions, path = '') {
    super('slow-call-ratio', options, path);
    assertDuration(`${path}slowCallMs`, options.slowCallMs);
    assertRatio(`${path}ratio`, options.ratio, { exclusiveMin: true });
    const minThroughput = options.minThroughput ?? 10;
    assertInteger(`${path}minThroughput`, minThroughput, 1);
    this.#slowCallMs = options.slowCallMs;
    this.#ratio = options.ratio;
    this.#minThroughput = minThroughput;
  }

  success(now: number, durationMs: number): boolean {
    return this.#record(now, false, durationMs);
  }

  failure(now: number, durationMs: number): boolean {
    return this.#record(now, true, durationMs);
  }

  #record(now: number, failed: boolean, durationMs: number): boolean {
    const slow = durationMs > this.#slowCallMs;
    this.window.record(now, failed, slow);
    if (!slow) return false;
    const { calls, slow: slowCalls } = this.window.totals;
    return calls >= this.#minThroughput && slowCalls >= this.#ratio * calls;
  }
}
