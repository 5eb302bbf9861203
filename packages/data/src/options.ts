import {
  assertDuration,
  assertInteger,
  assertObject,
  assertOptionalDuration,
  type Clock,
  InvalidOptionsError,
  systemClock,
} from '@stratus/core';
import type { CircuitBreakerOptions, CircuitBreakerPolicy } from '@stratus/resilience';
import type { CacheStore } from './store.js';

/** How long entries live; each field also accepted per call by `getOrLoad` and `set`. */
export interface EntryOptions {
  /** How long a loaded value is fresh. Default: the cache's `ttlMs`. */
  ttlMs?: number;
  /**
   * Remember a loader result of `undefined` or `null` for this long (negative caching). Default: the cache's
   * `negativeTtlMs`, which by default is unset: missing values are never cached.
   */
  negativeTtlMs?: number;
  /**
   * Stale-while-revalidate: after `ttlMs`, keep serving the old value for up to this long while one background
   * refresh runs. Default: the cache's `staleWhileRevalidateMs`, by default 0 (off).
   */
  staleWhileRevalidateMs?: number;
}

export interface LocalTierOptions {
  /** Entry bound of the in-process LRU (integer >= 1). Default 10,000. */
  maxEntries?: number;
  /**
   * Cap on how long an entry lives in the local tier, whatever its TTL: bounds how stale an instance can be if it
   * misses an invalidation broadcast. Default: no cap beyond the entry's own deadlines.
   */
  maxTtlMs?: number;
}

export interface DistributedLockOptions {
  /**
   * The lock lapses after this long if its holder dies (a live holder renews it every third of this while its
   * load runs). Default 10,000.
   */
  ttlMs?: number;
  /**
   * Longest wait between two looks at the store while another process loads (a release wakes waiters at once
   * through the broadcast; this bounds the wait when the holder died or a message was lost). Default 100.
   */
  pollMs?: number;
  /**
   * After waiting this long for another process's load (its holder alive and renewing), load without the lock.
   * Default 30,000, at least 2 × `ttlMs`.
   */
  maxWaitMs?: number;
}

export interface CacheAsideOptions extends EntryOptions {
  /** Names the cache in events. Default "cache". */
  name?: string;
  clock?: Clock;
  /** The in-process LRU tier; `false` for none. Default `{ maxEntries: 10_000 }`. */
  local?: LocalTierOptions | false;
  /** The shared tier (memory or Redis adapter); none by default (local tier only). */
  store?: CacheStore;
  /**
   * Single flight across processes: a miss takes a load lock on the key in the store, and other processes wait
   * for that load instead of calling the loader. `true` for the defaults. Needs `store`. Default off.
   */
  distributedLock?: boolean | DistributedLockOptions;
  /**
   * The circuit breaker guarding store calls: a policy of your own, or options for one. Default: opens after 5
   * consecutive store failures, for 5 s.
   */
  breaker?: CircuitBreakerPolicy | CircuitBreakerOptions;
  /** A store call taking longer than this counts as failed (0: no limit). Default 1,000. */
  storeTimeoutMs?: number;
}

export interface ResolvedEntryOptions {
  readonly ttlMs: number;
  readonly negativeTtlMs: number | undefined;
  readonly staleWhileRevalidateMs: number;
}

export interface ResolvedLockOptions {
  readonly ttlMs: number;
  readonly pollMs: number;
  readonly maxWaitMs: number;
}

export interface ResolvedOptions {
  readonly name: string;
  readonly clock: Clock;
  readonly entry: ResolvedEntryOptions;
  readonly local: { readonly maxEntries: number; readonly maxTtlMs: number | undefined } | undefined;
  readonly store: CacheStore | undefined;
  readonly lock: ResolvedLockOptions | undefined;
  readonly breaker: CircuitBreakerPolicy | CircuitBreakerOptions | undefined;
  readonly storeTimeoutMs: number;
}

/** Three minutes: the catalogue's sample expiry. */
export const DEFAULT_TTL_MS = 180_000;
const DEFAULT_MAX_ENTRIES = 10_000;
export const DEFAULT_LOCK_TTL_MS = 10_000;
const DEFAULT_LOCK_POLL_MS = 100;
const DEFAULT_LOCK_MAX_WAIT_MS = 30_000;
const DEFAULT_STORE_TIMEOUT_MS = 1_000;

const STORE_METHODS = [
  'get',
  'set',
  'delete',
  'tryLock',
  'extendLock',
  'setIfLocked',
  'waitForUnlock',
  'onInvalidation',
];

/** Throws InvalidOptionsError for bad per-call options, allocating nothing (the hit path calls it). */
export function checkEntryOptions(options: EntryOptions): void {
  if (typeof options !== 'object' || options === null) assertObject('options', options as unknown);
  if (options.ttlMs !== undefined) assertDuration('options.ttlMs', options.ttlMs, { allowZero: false });
  if (options.negativeTtlMs !== undefined)
    assertDuration('options.negativeTtlMs', options.negativeTtlMs, { allowZero: false });
  if (options.staleWhileRevalidateMs !== undefined)
    assertDuration('options.staleWhileRevalidateMs', options.staleWhileRevalidateMs);
}

/** Per-call entry options layered over the cache's; throws InvalidOptionsError naming the bad one. */
export function resolveEntryOptions(
  options: EntryOptions | undefined,
  defaults: ResolvedEntryOptions,
  prefix = 'options',
): ResolvedEntryOptions {
  if (options === undefined) return defaults;
  assertObject(prefix || 'options', options as unknown);
  const field = (name: string) => (prefix ? `${prefix}.${name}` : name);
  const { ttlMs, negativeTtlMs, staleWhileRevalidateMs } = options;
  assertOptionalDuration(field('ttlMs'), ttlMs, { allowZero: false });
  assertOptionalDuration(field('negativeTtlMs'), negativeTtlMs, { allowZero: false });
  assertOptionalDuration(field('staleWhileRevalidateMs'), staleWhileRevalidateMs);
  if (ttlMs === undefined && negativeTtlMs === undefined && staleWhileRevalidateMs === undefined)
    return defaults;
  return {
    ttlMs: ttlMs ?? defaults.ttlMs,
    negativeTtlMs: negativeTtlMs ?? defaults.negativeTtlMs,
    staleWhileRevalidateMs: staleWhileRevalidateMs ?? defaults.staleWhileRevalidateMs,
  };
}

export function resolveOptions(options: CacheAsideOptions): ResolvedOptions {
  assertObject('options', options as unknown);
  const name = options.name ?? 'cache';
  if (typeof name !== 'string' || name === '')
    throw new InvalidOptionsError('name', 'expected a non-empty string');
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== 'function' || typeof clock.setTimeout !== 'function')
    throw new InvalidOptionsError('clock', 'expected a Clock');

  const entry = resolveEntryOptions(
    {
      ttlMs: options.ttlMs,
      negativeTtlMs: options.negativeTtlMs,
      staleWhileRevalidateMs: options.staleWhileRevalidateMs,
    },
    { ttlMs: DEFAULT_TTL_MS, negativeTtlMs: undefined, staleWhileRevalidateMs: 0 },
    '',
  );

  let local: ResolvedOptions['local'];
  if (options.local !== false) {
    const given = options.local ?? {};
    assertObject('local', given as unknown);
    const maxEntries = given.maxEntries ?? DEFAULT_MAX_ENTRIES;
    assertInteger('local.maxEntries', maxEntries, 1);
    assertOptionalDuration('local.maxTtlMs', given.maxTtlMs, { allowZero: false });
    local = { maxEntries, maxTtlMs: given.maxTtlMs };
  }

  const store = options.store;
  if (store !== undefined) {
    assertObject('store', store as unknown);
    for (const method of STORE_METHODS) {
      if (typeof (store as unknown as Record<string, unknown>)[method] !== 'function')
        throw new InvalidOptionsError('store', `expected a CacheStore (no ${method} method)`);
    }
  }

  let lock: ResolvedLockOptions | undefined;
  const wantLock = options.distributedLock ?? false;
  if (wantLock !== false) {
    if (wantLock !== true) assertObject('distributedLock', wantLock as unknown);
    if (store === undefined)
      throw new InvalidOptionsError('distributedLock', 'needs a shared store (the `store` option)');
    const given = wantLock === true ? {} : wantLock;
    const ttlMs = given.ttlMs ?? DEFAULT_LOCK_TTL_MS;
    assertDuration('distributedLock.ttlMs', ttlMs, { allowZero: false });
    const pollMs = given.pollMs ?? DEFAULT_LOCK_POLL_MS;
    assertDuration('distributedLock.pollMs', pollMs, { allowZero: false });
    const maxWaitMs = given.maxWaitMs ?? Math.max(DEFAULT_LOCK_MAX_WAIT_MS, 2 * ttlMs);
    assertDuration('distributedLock.maxWaitMs', maxWaitMs);
    lock = { ttlMs, pollMs, maxWaitMs };
  }

  const breaker = options.breaker;
  if (breaker !== undefined) assertObject('breaker', breaker as unknown);
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertDuration('storeTimeoutMs', storeTimeoutMs);

  return { name, clock, entry, local, store, lock, breaker, storeTimeoutMs };
}
