import type { Clock } from '@stratus/core';

export interface CachedState<T> {
  readonly value: T;
  /** Young enough to use without looking at the stream (see SnapshotCacheOptions.trustMs). */
  readonly trusted: boolean;
}

/**
 * Recent aggregate states by stream, the CQRS Journey's memento cache: bounded (least recently used dropped
 * first), with an absolute expiry, and a short window in which an entry is trusted as current.
 */
export class SnapshotCache<T> {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #trustMs: number;
  readonly #maxEntries: number;
  /** Map order is recency order: a read moves the entry to the end. */
  readonly #entries = new Map<string, { value: T; savedAt: number; trusted: boolean }>();

  constructor(clock: Clock, options: { ttlMs: number; trustMs: number; maxEntries: number }) {
    this.#clock = clock;
    this.#ttlMs = options.ttlMs;
    this.#trustMs = options.trustMs;
    this.#maxEntries = options.maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): CachedState<T> | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    const age = this.#clock.now() - entry.savedAt;
    this.#entries.delete(key);
    if (age >= this.#ttlMs) return undefined;
    this.#entries.set(key, entry);
    return { value: entry.value, trusted: entry.trusted && age < this.#trustMs };
  }

  set(key: string, value: T): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, savedAt: this.#clock.now(), trusted: true });
    if (this.#entries.size > this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value as string);
    }
  }

  /**
   * The entry stays as a starting point (a state the stream did reach; the events after it are read on top) but is
   * no longer taken as current: another writer has moved the stream on.
   */
  distrust(key: string): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined) entry.trusted = false;
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
