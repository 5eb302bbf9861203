import { assertInteger, assertRatio } from '@stratus/core';

/**
 * The most recent `capacity` latency samples, answering exact percentile queries in O(1). Memory is fixed:
 * a ring keeps arrival order (to know which sample to evict) and a second array keeps the same samples
 * sorted, updated on each record by one binary search and one block move (copyWithin), which for a few
 * hundred samples costs far less than sorting on query.
 */
export class LatencyWindow {
  readonly capacity: number;
  readonly #ring: Float64Array;
  readonly #sorted: Float64Array;
  #size = 0;
  /** Ring position of the next sample (the oldest one once the window is full). */
  #next = 0;

  constructor(capacity = 256) {
    assertInteger('windowSize', capacity, 1);
    this.capacity = capacity;
    this.#ring = new Float64Array(capacity);
    this.#sorted = new Float64Array(capacity);
  }

  /** Samples currently in the window. */
  get size(): number {
    return this.#size;
  }

  /** Adds a sample, evicting the oldest one when the window is full. Non-finite values are ignored. */
  record(ms: number): void {
    if (!Number.isFinite(ms)) return;
    const sorted = this.#sorted;
    const size = this.#size;
    const insertAt = upperBound(sorted, size, ms);
    if (size < this.capacity) {
      sorted.copyWithin(insertAt + 1, insertAt, size);
      sorted[insertAt] = ms;
      this.#size = size + 1;
    } else {
      const removeAt = lowerBound(sorted, size, this.#ring[this.#next]!);
      if (insertAt > removeAt) {
        // Close the gap on the left, open one just before insertAt.
        sorted.copyWithin(removeAt, removeAt + 1, insertAt);
        sorted[insertAt - 1] = ms;
      } else {
        sorted.copyWithin(insertAt + 1, insertAt, removeAt);
        sorted[insertAt] = ms;
      }
    }
    this.#ring[this.#next] = ms;
    this.#next = this.#next + 1 === this.capacity ? 0 : this.#next + 1;
  }

  /** The nearest-rank percentile `p` (0 < p <= 1) of the window, or undefined while it is empty. */
  percentile(p: number): number | undefined {
    assertRatio('percentile', p, { exclusiveMin: true });
    if (this.#size === 0) return undefined;
    const rank = Math.min(Math.max(Math.ceil(p * this.#size), 1), this.#size);
    return this.#sorted[rank - 1];
  }
}

/** First index in sorted[0, size) whose value is >= value. */
function lowerBound(sorted: Float64Array, size: number, value: number): number {
  let lo = 0;
  let hi = size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in sorted[0, size) whose value is > value. */
function upperBound(sorted: Float64Array, size: number, value: number): number {
  let lo = 0;
  let hi = size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
