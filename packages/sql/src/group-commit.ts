/**
 * Group commit: items submitted while a batch is in flight wait and go together in the next one, so N concurrent
 * callers cost about one round trip instead of N, and a lone caller waits only a microtask. Each caller gets its
 * own result (or the batch's error).
 */
export class GroupCommit<I, O> {
  readonly #flush: (items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  #pending: { item: I; resolve: (value: O) => void; reject: (error: unknown) => void }[] = [];
  #inFlight = false;
  #scheduled = false;

  constructor(flush: (items: I[]) => Promise<O[]>, maxBatch = 1000) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** Items waiting or in flight. */
  get size(): number {
    return this.#pending.length;
  }

  #schedule(): void {
    if (this.#inFlight || this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#run();
    });
  }

  async #run(): Promise<void> {
    if (this.#inFlight || this.#pending.length === 0) return;
    this.#inFlight = true;
    const batch = this.#pending.splice(0, this.#maxBatch);
    try {
      const results = await this.#flush(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => {
        entry.resolve(results[i] as O);
      });
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      this.#inFlight = false;
      if (this.#pending.length > 0) this.#schedule();
    }
  }
}

/**
 * One group commit per key (a queue, say): calls with the same key share round trips, other keys go their own
 * way. A key's group lives while it has callers, so keys that come and go do not accumulate.
 */
export class KeyedGroupCommit<I, O> {
  readonly #flush: (key: string, items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  readonly #groups = new Map<string, { readonly commit: GroupCommit<I, O>; callers: number }>();

  constructor(flush: (key: string, items: I[]) => Promise<O[]>, maxBatch = 1000) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
  }

  submit(key: string, item: I): Promise<O> {
    let group = this.#groups.get(key);
    if (group === undefined) {
      group = { commit: new GroupCommit((items) => this.#flush(key, items), this.#maxBatch), callers: 0 };
      this.#groups.set(key, group);
    }
    const current = group;
    current.callers++;
    return current.commit.submit(item).finally(() => {
      if (--current.callers === 0 && this.#groups.get(key) === current) this.#groups.delete(key);
    });
  }

  /** Keys with callers waiting or in flight. */
  get keys(): number {
    return this.#groups.size;
  }
}
