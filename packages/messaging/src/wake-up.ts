import type { Clock, TimerHandle } from '@stratus/core';

/** Milliseconds until `dueAt` (at least 1), or Infinity when nothing is due. */
export function dueIn(clock: Clock, dueAt: number | undefined): number {
  return dueAt === undefined ? Number.POSITIVE_INFINITY : Math.max(1, dueAt - clock.now());
}

/** A wake-up that is not lost when it comes before anyone waits for it. */
export class WakeUp {
  #signalled = false;
  #wake: (() => void) | undefined;

  signal(): void {
    this.#signalled = true;
    this.#wake?.();
  }

  reset(): void {
    this.#signalled = false;
  }

  /** Resolves on a signal (also one already given since reset), after `ms`, or when `abort` fires. */
  wait(clock: Clock, ms: number, abort?: AbortSignal): Promise<void> {
    if (this.#signalled || abort?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = () => {
        this.#wake = undefined;
        if (timer !== undefined) clock.clearTimeout(timer);
        abort?.removeEventListener('abort', done);
        resolve();
      };
      this.#wake = done;
      if (Number.isFinite(ms)) timer = clock.setTimeout(done, ms);
      abort?.addEventListener('abort', done, { once: true });
    });
  }
}
