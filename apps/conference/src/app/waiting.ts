import { AsyncLocalStorage } from 'node:async_hooks';
import type { Clock } from '@stratus/core';
import type { AnnouncedChange, DocumentReader } from '@stratus/eventsourcing';

const ANY = '\u0000*';
const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;

/** Documents kept in memory at most (when caching). */
const CACHED_DOCUMENTS = 20_000;

/**
 * Waiting for eventually consistent views (Asynchronous Request-Reply): a check is re-run when a document it read
 * changes, not on every change, so hundreds of waiting requests cost reads only when their own documents move. The
 * documents a check reads are recorded through the readers this class wraps; a `find` waits on its whole collection.
 * Without a view runner in this process nothing reports changes, and the poll interval bounds the wait.
 *
 * With `cacheDocuments` (only where every change is reported once committed: the view runners run here, on SQLite),
 * documents read by id are kept until they change, so polling clients and waiting checks cost no query; while
 * changes may go unheard (`unheard`, until `hearingAgain`), none are. Cached
 * documents are shared by every caller: they must not be modified. A view version switched in while running is not
 * noticed (the system switches versions across restarts only).
 */
export class DocumentWaits {
  readonly #reads = new AsyncLocalStorage<Set<string>>();
  readonly #waiters = new Map<string, Set<() => void>>();
  readonly #clock: Clock;
  readonly #pollMs: number;
  readonly #documents: Map<string, unknown> | undefined;
  /** Changes heard so far: a read that a change overtook is not cached. */
  #changes = 0;
  /** False while changes may go unheard: then nothing is cached. */
  #hearing = true;

  constructor(clock: Clock, pollMs: number, options: { readonly cacheDocuments?: boolean } = {}) {
    this.#clock = clock;
    this.#pollMs = pollMs;
    this.#documents = options.cacheDocuments ? new Map() : undefined;
  }

  /** `reader`, recording what each check reads. */
  track(reader: DocumentReader): DocumentReader {
    return {
      get: async <T>(collection: string, id: string) => {
        const key = keyOf(collection, id);
        this.#reads.getStore()?.add(key);
        const documents = this.#documents;
        if (documents === undefined || !this.#hearing) return reader.get<T>(collection, id);
        if (documents.has(key)) return documents.get(key) as T | undefined;
        const changesBefore = this.#changes;
        const doc = await reader.get<T>(collection, id);
        if (this.#changes === changesBefore) this.#remember(documents, key, doc);
        return doc;
      },
      find: (collection, lookup, slice) => {
        this.#reads.getStore()?.add(`${collection}${ANY}`);
        return reader.find(collection, lookup, slice);
      },
    };
  }

  /**
   * Wakes the waiters on these documents (and on their collections). A change that carries the document's new
   * content (or says it was deleted) replaces the cached one, so nobody has to read it.
   */
  changed(changes: readonly AnnouncedChange[]): void {
    this.#changes++;
    const documents = this.#documents;
    for (const change of changes) {
      const key = keyOf(change.collection, change.id);
      if (documents !== undefined && this.#hearing && ('doc' in change || change.deleted === true))
        this.#remember(documents, key, change.doc);
      else documents?.delete(key);
      this.#wake(key);
      this.#wake(`${change.collection}${ANY}`);
    }
  }

  /** Forgets every cached document and wakes every waiter: changes may have gone unreported. */
  changedAll(): void {
    this.#changes++;
    this.#documents?.clear();
    for (const waiting of [...this.#waiters.values()]) for (const done of [...waiting]) done();
  }

  /**
   * This document cannot exist yet (its id was just made, and what creates it not sent yet): when caching, it is
   * known missing until a change says otherwise, so waiting for it costs no query.
   */
  absent(collection: string, id: string): void {
    if (this.#documents !== undefined && this.#hearing)
      this.#remember(this.#documents, keyOf(collection, id), undefined);
  }

  /** Changes may go unheard from now on (what reports them is down): cache nothing until `hearingAgain`. */
  unheard(): void {
    this.#hearing = false;
    this.changedAll();
  }

  /** Changes are reported again after `unheard`: any document may have changed meanwhile. */
  hearingAgain(): void {
    this.changedAll();
    this.#hearing = true;
  }

  /** `check`'s first answer other than undefined, or undefined once `timeoutMs` passed. */
  async waitFor<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
    const deadline = this.#clock.now() + timeoutMs;
    for (;;) {
      const read = new Set<string>();
      const changesBefore = this.#changes;
      const answer = await this.#reads.run(read, check);
      if (answer !== undefined) return answer;
      const left = deadline - this.#clock.now();
      if (left <= 0) return undefined;
      // A change heard while the check ran may be one it missed: check again rather than wait for the next.
      if (this.#changes !== changesBefore) continue;
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

  #remember(documents: Map<string, unknown>, key: string, doc: unknown): void {
    documents.delete(key);
    if (documents.size >= CACHED_DOCUMENTS) documents.delete(documents.keys().next().value as string);
    documents.set(key, doc);
  }

  #wake(key: string): void {
    const waiting = this.#waiters.get(key);
    if (waiting === undefined) return;
    for (const done of [...waiting]) done();
  }
}
