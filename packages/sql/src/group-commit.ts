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
