import { exponentialBackoff } from './backoff.js';

/** Store failures are retried after this: from 100 ms, doubling, up to 5 s. */
const STORE_RETRY = exponentialBackoff({ initialMs: 100, maxMs: 5_000, jitter: 'equal' });

/** What a long-running part reports when its store failed: the detail of its `store-error` event. */
export interface StoreError {
  readonly type: 'store-error';
  readonly error: unknown;
  /** Consecutive failures so far. */
  readonly attempt: number;
  /** When the part tries again (0: it is stopping, not again). */
  readonly retryInMs: number;
}

/**
 * What a long-running part (a subscription, a view runner, a consumer, an outbox relay) does when its store fails
 * (the database restarting, a dropped connection): it counts the failure, reports it, waits out a backoff and tries
 * again, never stopping for it. The count goes back to 0 at the next success, so it tells whether the part is healthy
 * now.
 */
export class StoreFailures {
  #count = 0;
  #previousMs = 0;

  /** Consecutive failures: 0 while the store answers. */
  get count(): number {
    return this.#count;
  }

  /** Counts a failure; returns the wait before the next try. */
  failed(): number {
    this.#count++;
    this.#previousMs = STORE_RETRY.delay(this.#count, this.#previousMs);
    return this.#previousMs;
  }

  /** Counts a failure of `error`; returns what to report, with the wait before the next try. */
  storeError(error: unknown): StoreError {
    const retryInMs = this.failed();
    return { type: 'store-error', error, attempt: this.#count, retryInMs };
  }

  succeeded(): void {
    this.#count = 0;
    this.#previousMs = 0;
  }
}
