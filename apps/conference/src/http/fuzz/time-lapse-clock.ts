import { type Clock, systemClock, type TimerHandle, type TimerOptions } from '@stratus/core';

/**
 * A clock that runs `factor` times faster than real time, from the moment it is made: `now()`, `monotonic()` and
 * timers alike, so everything timed by it stays consistent. A fuzzer drives a whole system on it so that the
 * requests that wait (long polls, views catching up) answer within a test's budget.
 */
export class TimeLapseClock implements Clock {
  readonly #factor: number;
  readonly #wallStart = Date.now();
  readonly #monoStart = performance.now();

  constructor(factor: number) {
    if (!(factor >= 1)) throw new RangeError(`a time lapse goes at least at real speed, got ${factor}`);
    this.#factor = factor;
  }

  now(): number {
    return Math.floor(this.#wallStart + (performance.now() - this.#monoStart) * this.#factor);
  }

  monotonic(): number {
    return this.#monoStart + (performance.now() - this.#monoStart) * this.#factor;
  }

  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle {
    return systemClock.setTimeout(callback, ms / this.#factor, options);
  }

  clearTimeout(handle: TimerHandle): void {
    systemClock.clearTimeout(handle);
  }
}
