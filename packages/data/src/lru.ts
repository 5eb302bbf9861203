/**
 * The local tier: an in-process LRU bounded by entry count, with a deadline per entry. A JavaScript Map keeps
 * insertion order, so "touch" (delete + set) moves a key to the young end and the oldest key is the first one
 * iterated: every operation is O(1) and a hit allocates nothing.
 */
export interface LruEntry<T = unknown> {
  readonly value: T;
  /** Epoch ms until which the entry is fresh. */
  readonly freshUntil: number;
  /** Epoch ms until which the entry may still be served stale (>= freshUntil); it is dropped after. */
  readonly staleUntil: number;
}

export class LocalLru {
  readonly #entries = new Map<string, LruEntry>();
  readonly maxEntries: number;

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry, if present and not past `staleUntil` at `now`; a found entry becomes the most recently used. */
  get(key: string, now: number): LruEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.staleUntil <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    // Move to the young end: a delete and a set, both O(1).
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry;
  }

  /** Present without touching recency or expiry (for tests and introspection). */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  set(key: string, entry: LruEntry): void {
    const entries = this.#entries;
    if (entries.has(key)) entries.delete(key);
    else if (entries.size >= this.maxEntries) {
      // The first key in iteration order is the least recently used.
      const oldest = entries.keys().next();
      if (!oldest.done) entries.delete(oldest.value);
    }
    entries.set(key, entry);
  }

  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Keys from least to most recently used. */
  keys(): string[] {
    return [...this.#entries.keys()];
  }
}
