export interface GroupCommitOptions {
  /**
   * A caller who finds nothing in flight or waiting goes at once, without waiting a microtask for company; those
   * who come meanwhile go together after it. For round trips cheap enough that a microtask shows.
   */
  readonly immediate?: boolean;
  /** Called each time the last batch in flight is answered with nobody waiting. */
  readonly onIdle?: () => void;
}

/**
 * Group commit: items submitted while a batch is in flight wait and go together in the next one, so N concurrent
 * callers cost about one round trip instead of N, and a lone caller waits only a microtask (or nothing, with
 * `immediate`). Each caller gets its own result (or the batch's error).
 */
export class GroupCommit<I, O> {
  readonly #flush: (items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  readonly #immediate: boolean;
  readonly #onIdle: (() => void) | undefined;
  #pending: { item: I; resolve: (value: O) => void; reject: (error: unknown) => void }[] = [];
  #inFlight = false;
  #scheduled = false;

  constructor(flush: (items: I[]) => Promise<O[]>, maxBatch = 1000, options: GroupCommitOptions = {}) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
    this.#immediate = options.immediate === true;
    this.#onIdle = options.onIdle;
  }

  submit(item: I): Promise<O> {
    if (this.#immediate && !this.#inFlight && !this.#scheduled) return this.#alone(item);
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

  async #alone(item: I): Promise<O> {
    this.#inFlight = true;
    try {
      return (await this.#flush([item]))[0] as O;
    } finally {
      this.#answered();
    }
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
      this.#answered();
    }
  }

  #answered(): void {
    this.#inFlight = false;
    if (this.#pending.length > 0) this.#schedule();
    else this.#onIdle?.();
  }
}

/**
 * One group commit per key (a queue, say): calls with the same key share round trips, other keys go their own
 * way. A key's group is forgotten once idle, so keys that come and go do not accumulate.
 */
export class KeyedGroupCommit<I, O> {
  readonly #flush: (key: string, items: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  readonly #immediate: boolean;
  readonly #groups = new Map<string, GroupCommit<I, O>>();

  constructor(
    flush: (key: string, items: I[]) => Promise<O[]>,
    maxBatch = 1000,
    options: Pick<GroupCommitOptions, 'immediate'> = {},
  ) {
    this.#flush = flush;
    this.#maxBatch = maxBatch;
    this.#immediate = options.immediate === true;
  }

  submit(key: string, item: I): Promise<O> {
    let group = this.#groups.get(key);
    if (group === undefined) {
      const created: GroupCommit<I, O> = new GroupCommit((items) => this.#flush(key, items), this.#maxBatch, {
        immediate: this.#immediate,
        onIdle: () => {
          if (this.#groups.get(key) === created) this.#groups.delete(key);
        },
      });
      group = created;
      this.#groups.set(key, group);
    }
    return group.submit(item);
  }

  /** Keys with callers waiting or in flight. */
  get keys(): number {
    return this.#groups.size;
  }
}
