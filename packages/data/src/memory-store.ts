import { type Clock, randomId, systemClock, type Unsubscribe } from '@stratus/core';
import { LockWaiters } from './lock-waiters.js';
import type { CacheEntry, CacheLock, CacheStore, InvalidationMessage, WriteOptions } from './store.js';

export interface MemoryCacheStoreOptions {
  /** Times lock expiry; default the system clock. Entries expire by the `now` each call passes. */
  clock?: Clock;
}

interface HeldLock {
  readonly token: string;
  readonly expiresAt: number;
}

/**
 * The shared tier in one process: several caches given the same instance behave like instances sharing a
 * Redis (locks, wake-ups and invalidation broadcasts included), which is what tests and single-process apps
 * need. Values are kept by reference, not copied.
 */
export class MemoryCacheStore implements CacheStore {
  readonly kind = 'memory';
  readonly #entries = new Map<string, CacheEntry>();
  readonly #locks = new Map<string, HeldLock>();
  readonly #waiters: LockWaiters;
  readonly #clock: Clock;
  #listeners: ((message: InvalidationMessage) => void)[] = [];
  #fence = 0;

  constructor(options: MemoryCacheStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#waiters = new LockWaiters(this.#clock);
  }

  async get(key: string, now: number): Promise<CacheEntry | undefined> {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.staleUntil <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  async set(key: string, entry: CacheEntry, _now: number, options: WriteOptions): Promise<void> {
    this.#entries.set(key, entry);
    this.#unlock(key);
    if (options.invalidate !== false) this.#broadcast(options.origin, [key]);
  }

  async delete(keys: readonly string[], options: WriteOptions): Promise<void> {
    for (const key of keys) {
      this.#entries.delete(key);
      this.#unlock(key);
    }
    this.#broadcast(options.origin, keys);
  }

  async tryLock(key: string, ttlMs: number): Promise<CacheLock | undefined> {
    if (this.#heldLock(key) !== undefined) return undefined;
    const fence = ++this.#fence;
    const token = `${randomId()}:${fence}`;
    this.#locks.set(key, { token, expiresAt: this.#clock.now() + ttlMs });
    return { key, token, fence };
  }

  async extendLock(lock: CacheLock, ttlMs: number): Promise<boolean> {
    if (this.#heldLock(lock.key)?.token !== lock.token) return false;
    this.#locks.set(lock.key, { token: lock.token, expiresAt: this.#clock.now() + ttlMs });
    return true;
  }

  async setIfLocked(
    lock: CacheLock,
    entry: CacheEntry | undefined,
    _now: number,
    options: WriteOptions,
  ): Promise<boolean> {
    if (this.#heldLock(lock.key)?.token !== lock.token) return false;
    if (entry !== undefined) this.#entries.set(lock.key, entry);
    this.#unlock(lock.key);
    if (entry !== undefined && options.invalidate !== false) this.#broadcast(options.origin, [lock.key]);
    return true;
  }

  waitForUnlock(key: string, timeoutMs: number): Promise<void> {
    return this.#waiters.wait(key, timeoutMs);
  }

  async ready(): Promise<void> {}

  onInvalidation(listener: (message: InvalidationMessage) => void): Unsubscribe {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  async close(): Promise<void> {
    this.#waiters.notifyAll();
  }

  /** The live lock on `key`, dropping one that expired. */
  #heldLock(key: string): HeldLock | undefined {
    const lock = this.#locks.get(key);
    if (lock !== undefined && lock.expiresAt <= this.#clock.now()) {
      this.#locks.delete(key);
      return undefined;
    }
    return lock;
  }

  #unlock(key: string): void {
    this.#locks.delete(key);
    this.#waiters.notify(key);
  }

  #broadcast(origin: string, keys: readonly string[]): void {
    if (keys.length === 0) return;
    const message: InvalidationMessage = { origin, keys: [...keys] };
    for (const listener of this.#listeners) listener(message);
  }
}
