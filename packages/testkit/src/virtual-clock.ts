import type { Clock, TimerHandle } from '@stratus/core';

interface VirtualTimer {
  readonly id: number;
  due: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** Lets pending promise reactions (microtasks) and I/O callbacks of the current turn run. */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Lets I/O and promise reactions run until `condition` holds, for a condition that depends on real I/O (a
 * server's answer, a child process). Bounded in real time: it fails with `what` instead of hanging.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what = 'the condition holds',
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await flushMicrotasks();
  }
}

/**
 * A clock whose time moves only when the test says so. Timers fire in due order (ties in creation order);
 * between two firings the microtask queue is drained, so async code that reacts to a timer by scheduling
 * another one is seen within the same `advance`.
 */
export class VirtualClock implements Clock {
  #wall: number;
  #mono: number;
  #seq = 0;
  #timers: VirtualTimer[] = [];

  constructor(options: { now?: number | Date; monotonic?: number } = {}) {
    const start = options.now ?? Date.UTC(2026, 0, 1);
    this.#wall = typeof start === 'number' ? start : start.getTime();
    this.#mono = options.monotonic ?? 0;
  }

  now(): number {
    return this.#wall;
  }

  monotonic(): number {
    return this.#mono;
  }

  date(): Date {
    return new Date(this.#wall);
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer: VirtualTimer = {
      id: ++this.#seq,
      due: this.#mono + Math.max(0, Number.isFinite(ms) ? ms : 0),
      callback,
      cancelled: false,
    };
    // Keep the list sorted by (due, id): binary search for the insertion point.
    let lo = 0;
    let hi = this.#timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#timers[mid]!.due <= timer.due) lo = mid + 1;
      else hi = mid;
    }
    this.#timers.splice(lo, 0, timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    const timer = handle as VirtualTimer;
    if (timer.cancelled) return;
    timer.cancelled = true;
    const index = this.#timers.indexOf(timer);
    if (index >= 0) this.#timers.splice(index, 1);
  }

  /** Number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Monotonic time at which the next timer fires, or undefined. */
  get nextDue(): number | undefined {
    return this.#timers[0]?.due;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way, in order. */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`advance expects a non-negative duration, got ${ms}`);
    await this.advanceTo(this.#mono + ms);
  }

  /** Moves the monotonic time to `target`, firing due timers in order. */
  async advanceTo(target: number): Promise<void> {
    await flushMicrotasks();
    for (;;) {
      const next = this.#timers[0];
      if (!next || next.due > target) break;
      this.#timers.shift();
      this.#setMonotonic(next.due);
      next.callback();
      await flushMicrotasks();
    }
    this.#setMonotonic(Math.max(this.#mono, target));
    await flushMicrotasks();
  }

  /** Fires timers until none is left (bounded, to catch runaway self-rescheduling). */
  async runAll(maxTimers = 10_000): Promise<void> {
    for (let fired = 0; this.#timers.length > 0; fired++) {
      if (fired >= maxTimers)
        throw new Error(`runAll: still ${this.#timers.length} timers after ${maxTimers}`);
      await this.advanceTo(this.#timers[0]!.due);
    }
  }

  /** Jumps the wall clock (as NTP would) without touching monotonic time or timers. */
  setWallTime(epochMs: number): void {
    this.#wall = epochMs;
  }

  #setMonotonic(value: number): void {
    this.#wall += value - this.#mono;
    this.#mono = value;
  }
}
