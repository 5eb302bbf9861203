import { Job } from './job.js';
import type { ReceivedMessage } from './received-message.js';

/**
 * The messages a consumer holds, locked: prefetched ones waiting for a handler slot, and running ones. A session
 * batch waits as its first message, the others chained behind it (Job.next) to run in order in the same slot.
 */
export class HeldJobs implements Iterable<Job> {
  readonly #held = new Set<Job>();
  /** In arrival order; a job let go while it waited stays here until taken, so check `has`. */
  readonly #waiting: Job[] = [];

  get size(): number {
    return this.#held.size;
  }

  /** Jobs waiting for a slot, a batch counted once. */
  get waiting(): number {
    return this.#waiting.length;
  }

  has(job: Job): boolean {
    return this.#held.has(job);
  }

  delete(job: Job): boolean {
    return this.#held.delete(job);
  }

  [Symbol.iterator](): Iterator<Job> {
    return this.#held.values();
  }

  /**
   * Holds received messages. Received in session batches (`batched`), messages of one session in one answer were
   * locked together (nothing else shares a session there), so they wait as one chain.
   */
  hold(messages: readonly ReceivedMessage<unknown>[], batched: boolean, receivedAt: number): void {
    const lastOfSession = new Map<string, Job>();
    for (const message of messages) {
      const job = new Job(message, receivedAt);
      this.#held.add(job);
      const session = batched ? message.sessionId : undefined;
      const previous = session === undefined ? undefined : lastOfSession.get(session);
      if (previous === undefined) this.#waiting.push(job);
      else previous.next = job;
      if (session !== undefined) lastOfSession.set(session, job);
    }
  }

  /** The job that waited longest, taken out of the wait. */
  nextWaiting(): Job | undefined {
    return this.#waiting.shift();
  }

  /** Forgets a job and the rest of its chain. */
  dropFrom(from: Job): void {
    for (let job: Job | undefined = from; job !== undefined; job = job.next) this.#held.delete(job);
  }

  /** Takes every waiting job out of the wait, chains unrolled, in order. */
  takeWaiting(): Job[] {
    const waiting: Job[] = [];
    for (const head of this.#waiting.splice(0))
      for (let job: Job | undefined = head; job !== undefined; job = job.next) waiting.push(job);
    return waiting;
  }
}
