import {
  assertFunction,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  randomId,
  type TimerHandle,
  type Unsubscribe,
} from '@stratus/core';
import { BrokenCircuitError, type CircuitBreakerPolicy, circuitBreaker } from '@stratus/resilience';
import { CacheStoreTimeoutError } from './errors.js';
import type { CacheEvent, CacheStats, CacheTier, StoreOperation } from './events.js';
import { LocalLru, type LruEntry } from './lru.js';
import {
  type CacheAsideOptions,
  checkEntryOptions,
  DEFAULT_LOCK_TTL_MS,
  type EntryOptions,
  type ResolvedEntryOptions,
  type ResolvedLockOptions,
  resolveEntryOptions,
  resolveOptions,
} from './options.js';
import type { CacheEntry, CacheLock, CacheStore, InvalidationMessage } from './store.js';

/** What a loader is told about the load it runs. */
export interface LoadContext {
  readonly key: string;
}

/** Reads the value of a key from the system of record (database, service) on a miss. */
export type Loader<T> = (context: LoadContext) => T | PromiseLike<T>;

export type Keys = string | readonly string[];

/** One fetch of a key in this process; concurrent misses share it. */
interface Flight {
  promise: Promise<unknown>;
  /** The key was set or deleted while this fetch ran: its result must not be cached. */
  invalidated: boolean;
  /** A stale value was served: refresh once this fetch is over. */
  refreshAfter: (() => void) | undefined;
}

/** A local-tier entry; `resolved` is the promise of its value, made on the first hit. */
interface LocalEntry extends LruEntry {
  resolved: Promise<unknown> | undefined;
}

type Counters = { -readonly [K in keyof CacheStats]: number };

const FORGET = Symbol('forget');

/**
 * Cache-aside (catalogue P01, G03): `getOrLoad` serves a key from the local LRU, else from the shared store,
 * else calls the loader once (in this process, and across processes with `distributedLock`) and keeps the
 * result with a per-item TTL. Writers change the system of record first and then invalidate
 * (`invalidateAfter`); invalidations reach every instance's local tier through the store's broadcast. A failing
 * store never fails a read: calls to it go through a circuit breaker, and on error the loader answers.
 */
export class CacheAside {
  readonly name: string;
  /** This instance, as named in invalidation broadcasts. */
  readonly instanceId = randomId();
  readonly events = new EventEmitter<CacheEvent>();
  /** The breaker guarding store calls (its own events tell when the store is bypassed for a while). */
  readonly breaker: CircuitBreakerPolicy;

  readonly #clock: Clock;
  readonly #defaults: ResolvedEntryOptions;
  readonly #local: LocalLru | undefined;
  readonly #localMaxTtlMs: number | undefined;
  readonly #store: CacheStore | undefined;
  readonly #lock: ResolvedLockOptions | undefined;
  /** TTL of load locks: those of `distributedLock`, and the fill locks that fence writes without it. */
  readonly #lockTtlMs: number;
  readonly #storeTimeoutMs: number;
  readonly #flights = new Map<string, Flight>();
  readonly #counts: Counters = {
    hits: 0,
    localHits: 0,
    storeHits: 0,
    staleHits: 0,
    misses: 0,
    coalesced: 0,
    loads: 0,
    loadErrors: 0,
    storeErrors: 0,
    lockWaits: 0,
    lockTimeouts: 0,
    lockLost: 0,
    remoteInvalidations: 0,
    localEntries: 0,
  };
  readonly #unsubscribe: Unsubscribe | undefined;
  #closed = false;

  constructor(options: CacheAsideOptions = {}) {
    const resolved = resolveOptions(options);
    this.name = resolved.name;
    this.#clock = resolved.clock;
    this.#defaults = resolved.entry;
    this.#local = resolved.local && new LocalLru(resolved.local.maxEntries);
    this.#localMaxTtlMs = resolved.local?.maxTtlMs;
    this.#store = resolved.store;
    this.#lock = resolved.lock;
    this.#lockTtlMs = resolved.lock?.ttlMs ?? DEFAULT_LOCK_TTL_MS;
    this.#storeTimeoutMs = resolved.storeTimeoutMs;
    const breaker = resolved.breaker;
    this.breaker =
      breaker !== undefined && typeof (breaker as CircuitBreakerPolicy).execute === 'function'
        ? (breaker as CircuitBreakerPolicy)
        : circuitBreaker({
            name: `${this.name}.store`,
            clock: this.#clock,
            trip: { kind: 'consecutive-failures', failures: 5 },
            openMs: 5_000,
            ...(breaker as object | undefined),
          });
    if (this.#local !== undefined && this.#store !== undefined)
      this.#unsubscribe = this.#store.onInvalidation((message) => this.#onRemoteInvalidation(message));
  }

  /** Counters since creation (a snapshot). */
  get stats(): CacheStats {
    const c = this.#counts;
    return { ...c, hits: c.localHits + c.storeHits, localEntries: this.#local?.size ?? 0 };
  }

  /** Resolves once invalidations from other instances reach this one (the store's subscription is live). */
  async ready(): Promise<void> {
    if (this.#unsubscribe !== undefined) await this.#store?.ready();
  }

  /**
   * The value of `key`: a fresh cached one, else a stale one within its grace window (refreshed in the
   * background), else the loader's, which is cached unless it is `undefined`/`null` (see `negativeTtlMs`).
   * Concurrent misses of a key share one load. Rejects only with the loader's error.
   */
  getOrLoad<T>(key: string, loader: Loader<T>, options?: EntryOptions): Promise<T> {
    if (typeof key !== 'string') throw new InvalidOptionsError('key', 'expected a string');
    const local = this.#local;
    if (local !== undefined) {
      const now = this.#clock.now();
      const entry = local.get(key, now);
      if (entry !== undefined) {
        if (options !== undefined) checkEntryOptions(options);
        if (entry.freshUntil > now) {
          // The hot path: no await, no allocation.
          this.#counts.localHits++;
          if (this.events.active) this.#emitHit(key, 'local', false);
          // One resolved promise per entry, made on its first hit and reused: later hits allocate nothing.
          const hit = entry as LocalEntry;
          if (hit.resolved === undefined) hit.resolved = Promise.resolve(hit.value);
          return hit.resolved as Promise<T>;
        }
        this.#counts.localHits++;
        this.#counts.staleHits++;
        if (this.events.active) this.#emitHit(key, 'local', true);
        assertFunction('loader', loader);
        this.#startRefresh(key, loader, resolveEntryOptions(options, this.#defaults));
        return Promise.resolve(entry.value as T);
      }
    }
    return this.#miss(key, loader, options);
  }

  /** The cached value of `key` (fresh only), or undefined; never loads, never rejects for a store outage. */
  async get<T>(key: string): Promise<T | undefined> {
    if (typeof key !== 'string') throw new InvalidOptionsError('key', 'expected a string');
    const now = this.#clock.now();
    const local = this.#local?.get(key, now);
    if (local !== undefined && local.freshUntil > now) {
      this.#counts.localHits++;
      if (this.events.active) this.#emitHit(key, 'local', false);
      return local.value as T;
    }
    const store = this.#store;
    if (store !== undefined) {
      const entry = await this.#guard('get', key, () => store.get(key, now)).catch(() => undefined);
      const at = this.#clock.now();
      if (entry !== undefined && entry.freshUntil > at) {
        this.#counts.storeHits++;
        if (this.events.active) this.#emitHit(key, 'store', false);
        this.#putLocal(key, entry, at);
        return entry.value as T;
      }
    }
    this.#counts.misses++;
    if (this.events.active) this.#emit({ type: 'miss', key });
    return undefined;
  }

  /**
   * Puts `value` in both tiers (priming, or a writer that has the new value at hand) and evicts the key from
   * every other instance's local tier. `undefined`/`null` is kept only with `negativeTtlMs`, else the key is
   * deleted. Never rejects for a store outage (a `store-error` event says so).
   */
  async set(key: string, value: unknown, options?: EntryOptions): Promise<void> {
    if (typeof key !== 'string') throw new InvalidOptionsError('key', 'expected a string');
    const settings = resolveEntryOptions(options, this.#defaults);
    const now = this.#clock.now();
    const entry = entryOf(value, settings, now);
    if (entry === undefined) return this.delete(key);
    this.#forgetLocally(key);
    this.#putLocal(key, entry, now);
    const store = this.#store;
    if (store !== undefined) {
      await this.#guard('set', key, () => store.set(key, entry, now, { origin: this.instanceId })).catch(
        () => {},
      );
    }
  }

  /**
   * Invalidates `keys` in this instance (local tier, loads under way), in the store, and in every other
   * instance's local tier. Never rejects for a store outage (a `store-error` event says so; the store's copy
   * then lives until its TTL).
   */
  async delete(keys: Keys): Promise<void> {
    const list = keyList(keys);
    for (const key of list) this.#forgetLocally(key);
    const store = this.#store;
    if (store !== undefined && list.length > 0) {
      await this.#guard('delete', list.length === 1 ? list[0] : undefined, () =>
        store.delete(list, { origin: this.instanceId }),
      ).catch(() => {});
    }
  }

  /**
   * The cache-aside write: runs `write` (the change to the system of record) and only then invalidates `keys`,
   * so no reader can cache the old value after the write completed. The keys are invalidated even when `write`
   * throws (it may have changed something before failing); its error is then rethrown.
   */
  async invalidateAfter<R>(write: () => R | PromiseLike<R>, keys: Keys): Promise<R> {
    assertFunction('write', write);
    keyList(keys);
    let result: R;
    try {
      result = await write();
    } catch (error) {
      await this.delete(keys);
      throw error;
    }
    await this.delete(keys);
    return result;
  }

  /** Stops listening for invalidations; the store (yours) stays open. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
  }

  // -------------------------------------------------------------------------------------------------------------
  // Misses

  #miss<T>(key: string, loader: Loader<T>, options: EntryOptions | undefined): Promise<T> {
    const running = this.#flights.get(key);
    if (running !== undefined) {
      this.#counts.coalesced++;
      return running.promise as Promise<T>;
    }
    assertFunction('loader', loader);
    const settings = resolveEntryOptions(options, this.#defaults);
    const flight: Flight = { promise: undefined as never, invalidated: false, refreshAfter: undefined };
    this.#flights.set(key, flight);
    flight.promise = this.#fetch(key, loader, settings, flight).finally(() => this.#land(key, flight));
    return flight.promise as Promise<T>;
  }

  #land(key: string, flight: Flight): void {
    if (this.#flights.get(key) === flight) this.#flights.delete(key);
    flight.refreshAfter?.();
  }

  /** A miss in the local tier: the store, then the loader. */
  async #fetch<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
  ): Promise<T> {
    const store = this.#store;
    if (store === undefined) {
      this.#countMiss(key);
      return this.#loadKeepingLocally(key, loader, settings, flight, false);
    }
    let entry: CacheEntry | undefined;
    try {
      entry = await this.#guard('get', key, () => store.get(key, this.#clock.now()));
    } catch {
      // "Avoid using the cache for the rest of the call": load, and do not try to put.
      this.#countMiss(key);
      return this.#loadKeepingLocally(key, loader, settings, flight, false);
    }
    if (entry !== undefined) {
      const served = this.#serveFromStore(key, entry, flight);
      if (served !== FORGET) {
        if (served.stale) flight.refreshAfter = () => this.#startRefresh(key, loader, settings);
        return served.value as T;
      }
    }
    this.#countMiss(key);
    return this.#lock !== undefined
      ? this.#loadLocked(key, loader, settings, flight, this.#lock, store)
      : this.#loadFenced(key, loader, settings, flight, store, false);
  }

  /** A store entry as a hit (fresh, or stale within its grace window), or FORGET when it is past both. */
  #serveFromStore(
    key: string,
    entry: CacheEntry,
    flight: Flight,
  ): { readonly value: unknown; readonly stale: boolean } | typeof FORGET {
    const now = this.#clock.now();
    if (entry.staleUntil <= now) return FORGET;
    const stale = entry.freshUntil <= now;
    this.#counts.storeHits++;
    if (stale) this.#counts.staleHits++;
    if (this.events.active) this.#emitHit(key, 'store', stale);
    if (!flight.invalidated) this.#putLocal(key, entry, now);
    return { value: entry.value, stale };
  }

  /**
   * Loads and keeps the result in the local tier only: there is no store, the store failed (then "avoid using
   * the cache for the rest of the call"), or another instance holds the key's fill lock and its write will land.
   */
  async #loadKeepingLocally<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
    background: boolean,
  ): Promise<T> {
    const value = await this.#load(key, loader, background);
    const now = this.#clock.now();
    const entry = entryOf(value, settings, now);
    if (entry !== undefined && !flight.invalidated) this.#putLocal(key, entry, now);
    return value;
  }

  /**
   * A fill without waiting (no `distributedLock`): the key's lock is taken only to fence the write, so a load
   * that began before a write or delete (here or in any other process) cannot put its older value in the store
   * afterwards. If another instance holds the lock, load anyway and leave the store to its write.
   */
  async #loadFenced<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
    store: CacheStore,
    background: boolean,
  ): Promise<T> {
    let held: CacheLock | undefined;
    try {
      held = await this.#guard('lock', key, () => store.tryLock(key, this.#lockTtlMs));
    } catch {
      return this.#loadKeepingLocally(key, loader, settings, flight, background);
    }
    if (held === undefined) return this.#loadKeepingLocally(key, loader, settings, flight, background);
    return this.#loadHolding(key, loader, settings, flight, held, store, background);
  }

  /**
   * Single flight across processes: take the key's load lock and load, or wait for the holder's value (woken by
   * its release, or by the poll bound when it died and its lock lapsed), then try again.
   */
  async #loadLocked<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
    lock: ResolvedLockOptions,
    store: CacheStore,
  ): Promise<T> {
    const deadline = this.#clock.monotonic() + lock.maxWaitMs;
    let waiting = false;
    for (;;) {
      let held: CacheLock | undefined;
      try {
        held = await this.#guard('lock', key, () => store.tryLock(key, lock.ttlMs));
      } catch {
        return this.#loadKeepingLocally(key, loader, settings, flight, false);
      }
      if (held !== undefined) return this.#loadHolding(key, loader, settings, flight, held, store, false);

      if (!waiting) {
        waiting = true;
        this.#counts.lockWaits++;
        if (this.events.active) this.#emit({ type: 'lock-wait', key });
      }
      const left = deadline - this.#clock.monotonic();
      if (left <= 0) {
        this.#counts.lockTimeouts++;
        if (this.events.active) this.#emit({ type: 'lock-timeout', key });
        // The holder is alive but slow: load without caching in the store (its fenced write will land).
        return this.#loadKeepingLocally(key, loader, settings, flight, false);
      }
      await store.waitForUnlock(key, Math.min(lock.pollMs, left));
      let entry: CacheEntry | undefined;
      try {
        entry = await this.#guard('get', key, () => store.get(key, this.#clock.now()));
      } catch {
        return this.#loadKeepingLocally(key, loader, settings, flight, false);
      }
      if (entry !== undefined) {
        const served = this.#serveFromStore(key, entry, flight);
        if (served !== FORGET) return served.value as T;
      }
    }
  }

  /** Loads while holding the lock; the result is written only if the lock survived (fencing). */
  async #loadHolding<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
    held: CacheLock,
    store: CacheStore,
    background: boolean,
  ): Promise<T> {
    // A refresh replaces a value other instances may hold: tell them. A first fill replaces nothing.
    const origin = { origin: this.instanceId, invalidate: background };
    let value: T;
    const stopRenewing = this.#keepLock(held, store);
    try {
      value = await this.#load(key, loader, background);
    } catch (error) {
      stopRenewing();
      // Release at once so waiters try themselves instead of waiting for the lock to lapse.
      await this.#guard('unlock', key, () =>
        store.setIfLocked(held, undefined, this.#clock.now(), origin),
      ).catch(() => {});
      throw error;
    }
    stopRenewing();
    const now = this.#clock.now();
    const entry = flight.invalidated ? undefined : entryOf(value, settings, now);
    let kept: boolean;
    try {
      kept = await this.#guard(entry === undefined ? 'unlock' : 'set', key, () =>
        store.setIfLocked(held, entry, now, origin),
      );
    } catch {
      kept = true; // the store failed, not the lock: the local tier may still keep the value
    }
    if (!kept) {
      this.#counts.lockLost++;
      if (this.events.active) this.#emit({ type: 'lock-lost', key });
    } else if (entry !== undefined && !flight.invalidated) this.#putLocal(key, entry, now);
    return value;
  }

  /**
   * Renews a held lock every third of its TTL while the load runs, so a slow but live loader keeps it; a dead
   * process stops renewing and its lock lapses. Returns the function that stops the renewals.
   */
  #keepLock(held: CacheLock, store: CacheStore): () => void {
    const ttlMs = this.#lockTtlMs;
    let stopped = false;
    let timer: TimerHandle | undefined;
    const schedule = () => {
      timer = this.#clock.setTimeout(
        () => {
          timer = undefined;
          this.#guard('lock', held.key, () => store.extendLock(held, ttlMs)).then(
            (kept) => {
              // A lost lock is reported when the load completes (its fenced write is refused).
              if (kept && !stopped) schedule();
            },
            () => {
              if (!stopped) schedule(); // the store may come back before the lock lapses
            },
          );
        },
        ttlMs / 3,
        { unref: true },
      );
    };
    schedule();
    return () => {
      stopped = true;
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    };
  }

  async #load<T>(key: string, loader: Loader<T>, background: boolean): Promise<T> {
    this.#counts.loads++;
    const start = this.#clock.monotonic();
    try {
      const value = await loader({ key });
      if (this.events.active)
        this.#emit({ type: 'load', key, durationMs: this.#clock.monotonic() - start, background });
      return value;
    } catch (error) {
      this.#counts.loadErrors++;
      if (this.events.active) this.#emit({ type: 'load-error', key, error, background });
      throw error;
    }
  }

  /** One background refresh of a key served stale, unless a fetch of it is already running. */
  #startRefresh<T>(key: string, loader: Loader<T>, settings: ResolvedEntryOptions): void {
    if (this.#flights.has(key) || this.#closed) return;
    const flight: Flight = { promise: undefined as never, invalidated: false, refreshAfter: undefined };
    this.#flights.set(key, flight);
    flight.promise = this.#refresh(key, loader, settings, flight).finally(() => this.#land(key, flight));
    // Its failure is reported as a load-error event; callers that joined it see the rejection themselves.
    flight.promise.catch(() => {});
  }

  async #refresh<T>(
    key: string,
    loader: Loader<T>,
    settings: ResolvedEntryOptions,
    flight: Flight,
  ): Promise<T> {
    const store = this.#store;
    const lock = this.#lock;
    if (store === undefined) return this.#loadKeepingLocally(key, loader, settings, flight, true);
    if (lock === undefined) return this.#loadFenced(key, loader, settings, flight, store, true);
    let held: CacheLock | undefined;
    try {
      held = await this.#guard('lock', key, () => store.tryLock(key, lock.ttlMs));
    } catch {
      return this.#loadKeepingLocally(key, loader, settings, flight, true);
    }
    if (held !== undefined) return this.#loadHolding(key, loader, settings, flight, held, store, true);
    // Another process is loading it: its value arrives through the store (and its broadcast) shortly.
    return this.#loadLocked(key, loader, settings, flight, lock, store);
  }

  // -------------------------------------------------------------------------------------------------------------
  // Tiers, invalidation, store calls

  #putLocal(key: string, entry: CacheEntry | LruEntry, now: number): void {
    const local = this.#local;
    if (local === undefined) return;
    // Always a copy of our own: the hit path caches its resolved promise on it, never on the store's object.
    const cap = this.#localMaxTtlMs;
    const capped = cap !== undefined && entry.staleUntil > now + cap;
    const copy: LocalEntry = {
      value: entry.value,
      freshUntil: capped ? Math.min(entry.freshUntil, now + cap) : entry.freshUntil,
      staleUntil: capped ? now + cap : entry.staleUntil,
      resolved: undefined,
    };
    local.set(key, copy);
  }

  /** Drops `key` here: from the local tier, and from any fetch under way (whose result is now suspect). */
  #forgetLocally(key: string): void {
    this.#local?.delete(key);
    const flight = this.#flights.get(key);
    if (flight !== undefined) {
      flight.invalidated = true;
      // Later callers must not join a fetch that may return the value from before the change.
      this.#flights.delete(key);
    }
  }

  #onRemoteInvalidation(message: InvalidationMessage): void {
    if (message.origin === this.instanceId || this.#closed) return;
    if (message.all) {
      this.#counts.remoteInvalidations += this.#local?.size ?? 0;
      this.#local?.clear();
      for (const flight of this.#flights.values()) flight.invalidated = true;
      this.#flights.clear();
    } else {
      for (const key of message.keys) {
        if (this.#local?.has(key)) this.#counts.remoteInvalidations++;
        this.#forgetLocally(key);
      }
    }
    if (this.events.active)
      this.#emit({ type: 'remote-invalidation', keys: message.keys, all: message.all === true });
  }

  /** A store call through the breaker, bounded by `storeTimeoutMs`; failures are counted and reported. */
  async #guard<R>(operation: StoreOperation, key: string | undefined, call: () => Promise<R>): Promise<R> {
    try {
      return await this.breaker.execute(() => this.#bounded(operation, call));
    } catch (error) {
      this.#counts.storeErrors++;
      if (this.events.active) {
        this.#emit({
          type: 'store-error',
          operation,
          key,
          store: this.#store?.kind ?? '',
          error,
          circuitOpen: error instanceof BrokenCircuitError,
        });
      }
      throw error;
    }
  }

  #bounded<R>(operation: StoreOperation, call: () => Promise<R>): Promise<R> {
    const timeoutMs = this.#storeTimeoutMs;
    if (timeoutMs === 0) return call();
    return new Promise<R>((resolve, reject) => {
      const timer = this.#clock.setTimeout(
        () => reject(new CacheStoreTimeoutError(operation, timeoutMs)),
        timeoutMs,
        { unref: true },
      );
      call().then(
        (value) => {
          this.#clock.clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          this.#clock.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  #countMiss(key: string): void {
    this.#counts.misses++;
    if (this.events.active) this.#emit({ type: 'miss', key });
  }

  #emitHit(key: string, tier: CacheTier, stale: boolean): void {
    this.#emit({ type: 'hit', key, tier, stale });
  }

  #emit(event: DistributiveOmit<CacheEvent, 'component' | 'name' | 'at'>): void {
    this.events.emit({ ...event, component: 'cache', name: this.name, at: this.#clock.now() } as CacheEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The entry to keep for a loaded or written value, or undefined when it must not be cached. */
function entryOf(value: unknown, settings: ResolvedEntryOptions, now: number): CacheEntry | undefined {
  if (value === undefined || value === null) {
    const ttl = settings.negativeTtlMs;
    return ttl === undefined
      ? undefined
      : { value, freshUntil: now + ttl, staleUntil: now + ttl, negative: true };
  }
  const freshUntil = now + settings.ttlMs;
  return { value, freshUntil, staleUntil: freshUntil + settings.staleWhileRevalidateMs };
}

function keyList(keys: Keys): readonly string[] {
  if (typeof keys === 'string') return [keys];
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string'))
    throw new InvalidOptionsError('keys', 'expected a string or an array of strings');
  return keys;
}

export function cacheAside(options: CacheAsideOptions = {}): CacheAside {
  return new CacheAside(options);
}
