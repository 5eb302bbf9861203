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

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(callback, ms, options) {
    const timer = setTimeout(callback, ms);
    if (options?.unref) timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
