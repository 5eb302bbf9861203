import { assertFunction, assertObject, InvalidOptionsError } from '@stratus/core';
import type { CacheAside } from './cache.js';
import { checkEntryOptions, type EntryOptions } from './options.js';

export interface CachedLoaderOptions<A extends readonly unknown[], T> extends EntryOptions {
  /** The cache key of a call, deterministic in its arguments (e.g. `(id) => \`product:${id}\``). */
  key: (...args: A) => string;
  /** Reads the value from the system of record. */
  load: (...args: A) => T | PromiseLike<T>;
}

/**
 * One read method of a data source wrapped in cache-aside. The same key function serves the read and the
 * invalidation paths, so a writer can never invalidate a key other than the one readers fill.
 */
export interface CachedLoader<A extends readonly unknown[], T> {
  /** The value for these arguments: cached, or loaded once and cached. */
  get(...args: A): Promise<T>;
  /** The cache key of these arguments. */
  keyOf(...args: A): string;
  /** Invalidates the entry of these arguments everywhere. */
  invalidate(...args: A): Promise<void>;
  /** Runs `write` on the system of record, then invalidates the entry of these arguments. */
  invalidateAfter<R>(write: () => R | PromiseLike<R>, ...args: A): Promise<R>;
}

export function cachedLoader<A extends readonly unknown[], T>(
  cache: CacheAside,
  options: CachedLoaderOptions<A, T>,
): CachedLoader<A, T> {
  assertObject('options', options as unknown);
  assertFunction('key', options.key);
  assertFunction('load', options.load);
  const { key, load, ttlMs, negativeTtlMs, staleWhileRevalidateMs } = options;
  const entryOptions: EntryOptions = { ttlMs, negativeTtlMs, staleWhileRevalidateMs };
  checkEntryOptions(entryOptions);
  const keyOf = (...args: A): string => {
    const k = key(...args);
    if (typeof k !== 'string') throw new InvalidOptionsError('key', `must return a string, got ${typeof k}`);
    return k;
  };
  return {
    keyOf,
    get: (...args) => cache.getOrLoad(keyOf(...args), () => load(...args), entryOptions),
    invalidate: (...args) => cache.delete(keyOf(...args)),
    invalidateAfter: (write, ...args) => cache.invalidateAfter(write, keyOf(...args)),
  };
}
