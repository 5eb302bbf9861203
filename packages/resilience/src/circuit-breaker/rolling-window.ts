import { assertDuration, assertInteger } from '@stratus/core';

/** Counts of one window (or one bucket of it). */
export interface WindowCounts {
  calls: number;
  failures: number;
  slow: number;
}

/** A window exported for hydration: bucket counts oldest first, the last one being the current bucket. */
export interface RollingWindowState {
  readonly bucketMs: number;
  /** [calls, failures, slow] per bucket, oldest first. */
  readonly buckets: ReadonlyArray<readonly [number, number, number]>;
}

export interface RollingWindowOptions {
  /** Length of the window in ms. */
  windowMs: number;
  /** Buckets the window is split into (1..1000); default 10. Counts age out one bucket at a time. */
  buckets?: number;
}

/**
 * Calls, failures and slow calls over the last `windowMs` of monotonic time, kept in a fixed ring of buckets
 * so memory stays constant however many calls are made. A bucket is dropped whole once it falls out of the
 * window, so the window effectively spans between `windowMs - bucketMs` and `windowMs`.
 */
export class RollingWindow {
  readonly bucketMs: number;
  readonly #size: number;
  // Three counters per bucket, side by side: calls, failures, slow.
  readonly #counts: Float64Array;
  /** Absolute index (time / bucketMs) of the current bucket. */
  #current = Number.NEGATIVE_INFINITY;
  readonly totals: WindowCounts = { calls: 0, failures: 0, slow: 0 };

  constructor(options: RollingWindowOptions, path = '') {
    assertDuration(`${path}windowMs`, options.windowMs, { allowZero: false });
    const size = options.buckets ?? 10;
    assertInteger(`${path}buckets`, size, 1, 1000);
    this.#size = size;
    this.bucketMs = options.windowMs / size;
    this.#counts = new Float64Array(size * 3);
  }

  /** Adds one call at monotonic time `now`. */
  record(now: number, failed: boolean, slow: boolean): void {
    const slot = this.#roll(now) * 3;
    const counts = this.#counts;
    const totals = this.totals;
    counts[slot]!++;
    totals.calls++;
    if (failed) {
      counts[slot + 1]!++;
      totals.failures++;
    }
    if (slow) {
      counts[slot + 2]!++;
      totals.slow++;
    }
  }

  /** Drops buckets that fell out of the window by `now`; `totals` is then current. */
  refresh(now: number): void {
    this.#roll(now);
  }

  reset(): void {
    this.#counts.fill(0);
    this.totals.calls = 0;
    this.totals.failures = 0;
    this.totals.slow = 0;
    this.#current = Number.NEGATIVE_INFINITY;
  }

  exportState(now: number): RollingWindowState {
    const current = this.#roll(now);
    const buckets: [number, number, number][] = [];
    for (let i = 1; i <= this.#size; i++) {
      const slot = slotOf(current + i, this.#size) * 3;
      buckets.push([this.#counts[slot]!, this.#counts[slot + 1]!, this.#counts[slot + 2]!]);
    }
    return { bucketMs: this.bucketMs, buckets };
  }

  /** Restores exported counts so that the last exported bucket is the current one at `now`. */
  restoreState(state: RollingWindowState, now: number): void {
    this.reset();
    // A window of another shape cannot be mapped bucket for bucket; start empty rather than guess.
    if (state.bucketMs !== this.bucketMs || state.buckets.length !== this.#size) return;
    const current = this.#roll(now);
    state.buckets.forEach(([calls, failures, slow], i) => {
      const slot = slotOf(current + 1 + i, this.#size) * 3;
      this.#counts[slot] = calls;
      this.#counts[slot + 1] = failures;
      this.#counts[slot + 2] = slow;
      this.totals.calls += calls;
      this.totals.failures += failures;
      this.totals.slow += slow;
    });
  }

  /** Moves the ring to the bucket of `now`, clearing the buckets skipped over; returns its slot index. */
  #roll(now: number): number {
    const index = Math.floor(now / this.bucketMs);
    const size = this.#size;
    if (index > this.#current) {
      const gap = index - this.#current;
      if (gap >= size) {
        this.#counts.fill(0);
        this.totals.calls = 0;
        this.totals.failures = 0;
        this.totals.slow = 0;
      } else {
        for (let i = 1; i <= gap; i++) this.#clear(slotOf(this.#current + i, size) * 3);
      }
      this.#current = index;
    }
    // A clock that stepped back (it should not: it is monotonic) keeps counting into the current bucket.
    return slotOf(this.#current, size);
  }

  #clear(slot: number): void {
    const counts = this.#counts;
    this.totals.calls -= counts[slot]!;
    this.totals.failures -= counts[slot + 1]!;
    this.totals.slow -= counts[slot + 2]!;
    counts[slot] = 0;
    counts[slot + 1] = 0;
    counts[slot + 2] = 0;
  }
}

/** Ring position of an absolute bucket index (which may be negative for clocks that start below zero). */
function slotOf(index: number, size: number): number {
  const slot = index % size;
  return slot < 0 ? slot + size : slot;
}
