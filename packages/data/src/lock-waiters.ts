import type { Clock } from '@stratus/core';

/**
 * Callers parked until a key's load lock is released, each with a timer that wakes it anyway: a released
 * notice can be missed (a pub/sub message lost on reconnect), so waiting is always a bounded poll.
 */
export class LockWaiters {
  readonly #waiting = new Map<string, Set<() => void>>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  wait(key: string, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let set = this.#waiting.get(key);
      if (set === undefined) {
        set = new Set();
        this.#waiting.set(key, set);
      }
      const waiters = set;
      const wake = () => {
        this.#clock.clearTimeout(timer);
        waiters.delete(wake);
        if (waiters.size === 0 && this.#waiting.get(key) === waiters) this.#waiting.delete(key);
        resolve();
      };
      const timer = this.#clock.setTimeout(wake, timeoutMs, { unref: true });
      waiters.add(wake);
    });
  }

  /** Wakes everyone waiting on `key`. */
  notify(key: string): void {
    const waiters = this.#waiting.get(key);
    if (waiters === undefined) return;
    for (const wake of [...waiters]) wake();
  }

  /** Wakes everyone (the store is closing). */
  notifyAll(): void {
    for (const key of [...this.#waiting.keys()]) this.notify(key);
  }

  get size(): number {
    let n = 0;
    for (const set of this.#waiting.values()) n += set.size;
    return n;
  }
}
