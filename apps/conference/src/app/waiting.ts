import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '@stratus/core';
import type { DocumentKey, DocumentReader } from '@stratus/eventsourcing';

const ANY = '\u0000*';
const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;

/**
 * Waiting for eventually consistent views (Asynchronous Request-Reply): a check is re-run when a document it read
 * changes, not on every change, so hundreds of waiting requests cost reads only when their own documents move. The
 * documents a check reads are recorded through the readers this class wraps; a `find` waits on its whole collection.
 * Without a view runner in this process nothing reports changes, and the poll interval bounds the wait.
 */
export class DocumentWaits {
  readonly #reads = new AsyncLocalStorage<Set<string>>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #clock: Clock;
  readonly #pollMs: number;

  constructor(clock: Clock, pollMs: number) {
    this.#clock = clock;
    this.#pollMs = pollMs;
  }

  /** `reader`, recording what each check reads. */
  track(reader: DocumentReader): DocumentReader {
    return {
      get: (collection, id) => {
        this.#reads.getStore()?.add(keyOf(collection, id));
        return reader.get(collection, id);
      },
      find: (collection, lookup) => {
        this.#reads.getStore()?.add(`${collection}${ANY}`);
        return reader.find(collection, lookup);
      },
    };
  }

  /** Wakes the waiters on these documents (and on their collections). */
  changed(keys: readonly DocumentKey[]): void {
    for (const { collection, id } of keys) {
      this.#wake(keyOf(collection, id));
      this.#wake(`${collection}${ANY}`);
    }
  }

  /** `check`'s first answer other than undefined, or undefined once `timeoutMs` passed. */
  async waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
    const deadline = this.#clock.now() + timeoutMs;
    for (;;) {
      const read = new Set<string>();
      const answer = await this.#reads.run(read, check);
      if (answer !== undefined) return answer;
      const left = deadline - this.#clock.now();
      if (left <= 0) return undefined;
      await this.#nextChange(read, Math.min(left, this.#pollMs));
    }
  }

  #nextChange(keys: ReadonlySet<string>, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer);
        for (const key of keys) {
          const waiting = this.#waiters.get(key);
          waiting?.delete(done);
          if (waiting?.size === 0) this.#waiters.delete(key);
        }
        resolve();
      };
      const timer = this.#clock.setTimeout(done, ms);
      for (const key of keys) {
        const waiting = this.#waiters.get(key) ?? new Set();
        this.#waiters.set(key, waiting);
        waiting.add(done);
      }
    });
  }

  #wake(key: string): void {
    const waiting = this.#waiters.get(key);
    if (waiting === undefined) return;
    for (const done of [...waiting]) done();
  }
}
