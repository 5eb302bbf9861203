/**
 * Time as a port. Every time-based component takes a Clock so tests can drive it with a virtual one
 * (see @stratus/testkit) instead of sleeping.
 */
export type TimerHandle = { readonly __brand: 'TimerHandle' } | object;

export interface TimerOptions {
  /** Do not keep the process alive for this timer (background work such as sync loops). */
  unref?: boolean;
}

export interface Clock {
  /** Wall-clock time in epoch milliseconds, as Date.now(). */
  now(): number;
  /** Monotonic milliseconds (fractional), as performance.now(); only differences are meaningful. */
  monotonic(): number;
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Node's timers hold at most 2^31-1 ms (~24.8 days); a longer delay would fire after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay longer than Node's timers can hold, waited as a chain of maximal timers. */
class LongTimer {
  #timer: ReturnType<typeof setTimeout>;
  #due: number;

  constructor(
    readonly callback: () => void,
    ms: number,
    readonly unref: boolean,
  ) {
    this.#due = performance.now() + ms;
    this.#timer = this.#arm();
  }

  #arm(): ReturnType<typeof setTimeout> {
    const left = this.#due - performance.now();
    const timer = setTimeout(
      () => {
        if (this.#due - performance.now() > 1) this.#timer = this.#arm();
        else this.callback();
      },
      Math.min(MAX_TIMER_MS, Math.max(0, left)),
    );
    if (this.unref) timer.unref();
    return timer;
  }

  cancel(): void {
    clearTimeout(this.#timer);
  }
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(callback, ms, options) {
    if (ms > MAX_TIMER_MS) return new LongTimer(callback, ms, options?.unref === true);
    const timer = setTimeout(callback, ms);
    if (options?.unref) timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    if (handle instanceof LongTimer) handle.cancel();
    else clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
