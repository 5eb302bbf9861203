/**
 * The port behind the shared tier. A store keeps entries with a deadline, hands out per-key load locks with
 * an owner token (so only one process loads a missing key), wakes whoever waits on a lock when it is
 * released, and tells every other instance which keys changed so they can drop them from their local tier.
 * Two adapters implement it: memory (one process) and Redis (many).
 */
import type { Unsubscribe } from '@stratus/core';

/** What a store keeps for a key. Deadlines are epoch ms from the cache's clock. */
export interface CacheEntry {
  /** The value; `undefined` or `null` only in a negative entry. */
  readonly value: unknown;
  /** Fresh until this instant: served as a hit. */
  readonly freshUntil: number;
  /** Servable stale (stale-while-revalidate) until this instant; the store forgets the entry after it. */
  readonly staleUntil: number;
  /** The loader found nothing and the caller asked to remember that (negative caching). */
  readonly negative?: boolean;
}

/** A load lock held on one key: `token` proves ownership, `fence` grows with every lock the store grants. */
export interface CacheLock {
  readonly key: string;
  readonly token: string;
  readonly fence: number;
}

/** Sent by a store to every other instance on the same backplane when keys were set or deleted. */
export interface InvalidationMessage {
  /** The instance that changed them (so it can ignore its own message). */
  readonly origin: string;
  readonly keys: readonly string[];
  /** Messages may have been lost (the broadcast connection dropped): every key may have changed. */
  readonly all?: boolean;
}

export interface WriteOptions {
  /** The writing instance, carried in the invalidation message. */
  readonly origin: string;
  /**
   * Broadcast the key as changed (default true). A cache filling a miss passes false: every other instance
   * dropped the key when it was last invalidated, so telling them again would only evict copies they just read.
   */
  readonly invalidate?: boolean;
}

export interface CacheStore {
  /** "memory", "redis": for events and error messages. */
  readonly kind: string;
  /** The entry, or undefined when absent or past `staleUntil` at `now`. */
  get(key: string, now: number): Promise<CacheEntry | undefined>;
  /**
   * Stores `entry` (expiring at `staleUntil`), drops any load lock on the key (a load that started before this
   * write must not overwrite it: see `setIfLocked`), wakes lock waiters and broadcasts the key as changed
   * (unless `invalidate` is false).
   */
  set(key: string, entry: CacheEntry, now: number, options: WriteOptions): Promise<void>;
  /** Removes the entries and load locks of `keys`, wakes lock waiters and broadcasts the keys as changed. */
  delete(keys: readonly string[], options: WriteOptions): Promise<void>;
  /** Takes the load lock on `key` for `ttlMs` (it lapses by itself if the holder dies), or undefined if held. */
  tryLock(key: string, ttlMs: number): Promise<CacheLock | undefined>;
  /** Pushes the lock's expiry to `ttlMs` from now while it is still held; false when it was lost. */
  extendLock(lock: CacheLock, ttlMs: number): Promise<boolean>;
  /**
   * Fenced completion of a load: stores `entry` (when given) only while `lock` is still held (it was not lost to
   * expiry, a `set` or a `delete`), then releases the lock and wakes the waiters; a written entry is broadcast
   * as changed unless `invalidate` is false. Returns whether the lock was still held (and so `entry` written).
   */
  setIfLocked(
    lock: CacheLock,
    entry: CacheEntry | undefined,
    now: number,
    options: WriteOptions,
  ): Promise<boolean>;
  /**
   * Resolves when the lock on `key` is released (or lost), or after `timeoutMs` at the latest: a bounded poll,
   * so a lost wake-up costs latency, never liveness. Never rejects.
   */
  waitForUnlock(key: string, timeoutMs: number): Promise<void>;
  /** Resolves once invalidations from other instances are being received (Redis: subscribed). */
  ready(): Promise<void>;
  /** Invalidations broadcast by other instances (and this one: compare `origin`). */
  onInvalidation(listener: (message: InvalidationMessage) => void): Unsubscribe;
  /** Releases what the store opened itself (subscriptions, connections it created); never a client it was given. */
  close(): Promise<void>;
}
