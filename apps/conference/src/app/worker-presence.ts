/**
 * Which worker processes are alive: each holds a slot of one lease while it runs (renewed every LEASE_SECONDS / 3,
 * so a dead worker's slot is gone within LEASE_SECONDS), and the web counts the live holders for its health. A
 * deployment whose workers all died still takes orders, but nothing moves them on: the web says so.
 */
import { type DistributedLock, type LeaseStore, type LockHandle, semaphore } from '@stratus/coordination';
import type { Clock, TimerHandle } from '@stratus/core';

const LEASE = 'conference-workers';
/** The lease counts workers, it does not limit them: slots enough for any deployment. */
const SLOTS = 1_000_000;

/** A worker's slot, taken again whenever it is lost (the store was unreachable for longer than the lease). */
export class WorkerPresence {
  readonly #lock: DistributedLock;
  readonly #clock: Clock;
  readonly #retryMs: number;
  #hold: LockHandle | undefined;
  #retry: TimerHandle | undefined;
  #stopped = false;

  constructor(store: LeaseStore, clock: Clock, leaseMs: number) {
    this.#lock = semaphore({ store, name: LEASE, limit: SLOTS, ttlMs: leaseMs, waitMs: 0, clock });
    this.#clock = clock;
    this.#retryMs = leaseMs / 3;
  }

  /** Takes the slot; resolves once it is held, or once taking it failed and a retry is scheduled. */
  start(): Promise<void> {
    return this.#take();
  }

  async #take(): Promise<void> {
    this.#retry = undefined;
    const hold = await this.#lock.tryAcquire().catch(() => undefined);
    if (this.#stopped) {
      await hold?.release();
      return;
    }
    if (hold === undefined) {
      this.#takeLater();
      return;
    }
    this.#hold = hold;
    hold.signal.addEventListener('abort', () => this.#takeLater(), { once: true });
  }

  #takeLater(): void {
    if (!this.#stopped) this.#retry = this.#clock.setTimeout(() => void this.#take(), this.#retryMs);
  }

  /** Gives the slot back: the worker stops counting at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry !== undefined) this.#clock.clearTimeout(this.#retry);
    await this.#hold?.release();
  }
}

/** The worker processes alive now. */
export async function liveWorkers(store: LeaseStore, clock: Clock): Promise<number> {
  return (await store.holders(LEASE, clock.now())).length;
}
