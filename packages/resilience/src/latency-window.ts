import { assertInteger, assertRatio } from '@stratus/core';

/**
 * The most recent `capacity` latency samples in a ring, answering percentile queries. Memory is fixed; a
 * query sorts a copy of the window only when at least `refreshEvery` samples arrived since the last sort,
 * so a query per call costs O(1) amortised instead of O(n log n).
 */
export class LatencyWindow {
  readonly capacity: number;
  readonly refreshEvery: number;
  readonly #ring: Float64Array;
  readonly #sorted: Float64Array;
  #recorded = 0;
  /** Samples held in #sorted (0 = never sorted). */
  #sortedSize = 0;
  #sortedAt = 0;

  constructor(capacity = 256, refreshEvery = Math.max(1, Math.floor(capacity / 16))) {
    assertInteger('windowSize', capacity, 1);
    assertInteger('refreshEvery', refreshEvery, 1);
    this.capacity = capacity;
    this.refreshEvery = refreshEvery;
    this.#ring = new Float64Array(capacity);
    this.#sorted = new Float64Array(capacity);
  }

  /** Samples currently in the window. */
  get size(): number {
    return Math.min(this.#recorded, this.capacity);
  }

  record(ms: number): void {
    this.#ring[this.#recorded % this.capacity] = ms;
    this.#recorded++;
  }

  /** The nearest-rank percentile `p` (0 < p <= 1) of the window, or undefined while it is empty. */
  percentile(p: number): number | undefined {
    assertRatio('percentile', p, { exclusiveMin: true });
    const size = this.size;
    if (size === 0) return undefined;
    if (this.#sortedSize === 0 || this.#recorded - this.#sortedAt >= this.refreshEvery) {
      this.#sorted.set(size === this.capacity ? this.#ring : this.#ring.subarray(0, size));
      this.#sorted.subarray(0, size).sort();
      this.#sortedSize = size;
      this.#sortedAt = this.#recorded;
    }
    const rank = Math.ceil(p * this.#sortedSize);
    return this.#sorted[Math.min(Math.max(rank, 1), this.#sortedSize) - 1];
  }
}
