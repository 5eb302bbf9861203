import type { TimerHandle } from '@stratus/core';
import type { ConsumerEventSink } from './consumer-events.js';
import { MessageLockLostError } from './errors.js';
import type { HeldJobs } from './held-jobs.js';
import type { Job } from './job.js';
import type { QueueClient } from './queue-client.js';

/**
 * Keeps the locks of a consumer's held messages: one timer renews every lock that is past half its duration, in
 * one batched call. A message held for `maxRenewMs` is renewed no more, so a handler stuck for good lets it go.
 */
export class LockRenewal {
  readonly #queue: QueueClient<unknown>;
  readonly #held: HeldJobs;
  readonly #maxRenewMs: number;
  readonly #closing: () => boolean;
  readonly #event: ConsumerEventSink;
  #timer: TimerHandle | undefined;

  constructor(
    queue: QueueClient<unknown>,
    held: HeldJobs,
    maxRenewMs: number,
    closing: () => boolean,
    event: ConsumerEventSink,
  ) {
    this.#queue = queue;
    this.#held = held;
    this.#maxRenewMs = maxRenewMs;
    this.#closing = closing;
    this.#event = event;
  }

  /** Starts renewing locks of `lockMs`, unless renewals are under way or the consumer is closing. */
  arm(lockMs: number): void {
    if (this.#timer !== undefined || this.#closing()) return;
    const every = Math.max(1, Math.floor(lockMs / 3));
    this.#timer = this.#queue.messaging.clock.setTimeout(
      () => {
        this.#timer = undefined;
        void this.#renew(lockMs).finally(() => {
          if (this.#held.size > 0) this.arm(lockMs);
        });
      },
      every,
      { unref: true },
    );
  }

  stop(): void {
    if (this.#timer !== undefined) this.#queue.messaging.clock.clearTimeout(this.#timer);
  }

  async #renew(lockMs: number): Promise<void> {
    const { messaging, name } = this.#queue;
    const now = messaging.clock.now();
    const monotonic = messaging.clock.monotonic();
    const due: Job[] = [];
    for (const job of this.#held) {
      if (job.message.settled || job.message.lockedUntil - now > lockMs / 2) continue;
      if (monotonic - job.receivedAt < this.#maxRenewMs) due.push(job);
      else if (job.message.lockedUntil <= now && !job.aborted) this.#lockLost(job);
    }
    if (due.length === 0) return;
    let renewed: (number | undefined)[];
    try {
      renewed = await messaging.backend.renewLocks(
        name,
        due.map((job) => job.message.lockToken),
        lockMs,
        now,
      );
    } catch (error) {
      this.#event({ type: 'settle-failed', operation: 'renew', error });
      return;
    }
    due.forEach((job, i) => {
      const until = renewed[i];
      if (until !== undefined) {
        job.message.extendedTo(until);
        return;
      }
      if (!job.message.settled) this.#lockLost(job);
    });
  }

  /** The message may be handed to another consumer now: stop working on it. */
  #lockLost(job: Job): void {
    this.#event({ type: 'lock-lost', messageId: job.message.id });
    job.abort(new MessageLockLostError(this.#queue.name, job.message.id));
    if (!job.running) this.#held.delete(job);
  }
}
