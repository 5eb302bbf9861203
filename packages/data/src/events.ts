import type { StratusEvent } from '@stratus/core';

/** Where a hit was served from. */
export type CacheTier = 'local' | 'store';

/** The store calls a cache makes, as named in `store-error` events. */
export type StoreOperation = 'get' | 'set' | 'delete' | 'lock' | 'unlock';

interface CacheEventBase extends StratusEvent {
  readonly component: 'cache';
}

export type CacheEvent =
  | (CacheEventBase & {
      readonly type: 'hit';
      readonly key: string;
      readonly tier: CacheTier;
      /** Served stale within the grace window while one refresh runs. */
      readonly stale: boolean;
    })
  | (CacheEventBase & { readonly type: 'miss'; readonly key: string })
  | (CacheEventBase & {
      readonly type: 'load';
      readonly key: string;
      readonly durationMs: number;
      /** A stale-while-revalidate refresh rather than a caller's miss. */
      readonly background: boolean;
    })
  | (CacheEventBase & {
      readonly type: 'load-error';
      readonly key: string;
      readonly error: unknown;
      readonly background: boolean;
    })
  /** The store failed or its circuit is open: the call went on without it (reads go to the loader). */
  | (CacheEventBase & {
      readonly type: 'store-error';
      readonly operation: StoreOperation;
      readonly key: string | undefined;
      readonly store: string;
      readonly error: unknown;
      /** The store was not even called: its circuit breaker is open. */
      readonly circuitOpen: boolean;
    })
  /** Another process holds the key's load lock: this one waits for its value. */
  | (CacheEventBase & { readonly type: 'lock-wait'; readonly key: string })
  /** Waited `maxWaitMs` for another process's load: this one loaded itself. */
  | (CacheEventBase & { readonly type: 'lock-timeout'; readonly key: string })
  /**
   * The load lock was gone when the load finished (it expired, or a write or delete dropped it): the value was
   * returned to the callers but not cached, since it may predate that write.
   */
  | (CacheEventBase & { readonly type: 'lock-lost'; readonly key: string })
  /** Keys dropped from this instance's local tier because another instance set or deleted them. */
  | (CacheEventBase & {
      readonly type: 'remote-invalidation';
      readonly keys: readonly string[];
      /** The broadcast may have lost messages (a reconnect): the whole local tier was dropped. */
      readonly all: boolean;
    });

export type CacheEventType = CacheEvent['type'];

/** Counters since the cache was created; `hits` = `localHits` + `storeHits` (stale hits included). */
export interface CacheStats {
  readonly hits: number;
  readonly localHits: number;
  readonly storeHits: number;
  /** Hits served stale within the grace window (counted in the hits above too). */
  readonly staleHits: number;
  /** Misses that started a fetch; callers that joined a fetch already running count as `coalesced`. */
  readonly misses: number;
  readonly coalesced: number;
  /** Loader calls (including background refreshes) and those that threw. */
  readonly loads: number;
  readonly loadErrors: number;
  /** Store calls that failed, timed out or were refused by the open circuit. */
  readonly storeErrors: number;
  readonly lockWaits: number;
  readonly lockTimeouts: number;
  readonly lockLost: number;
  /** Keys evicted because another instance changed them. */
  readonly remoteInvalidations: number;
  /** Entries in the local tier now. */
  readonly localEntries: number;
}
