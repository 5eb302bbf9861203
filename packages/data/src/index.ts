export * from './cache.js';
export * from './cached-loader.js';
export * from './errors.js';
export * from './events.js';
export * from './lru.js';
export * from './memory-store.js';
export {
  type CacheAsideOptions,
  DEFAULT_TTL_MS,
  type DistributedLockOptions,
  type EntryOptions,
  type LocalTierOptions,
} from './options.js';
export * from './redis-store.js';
export * from './store.js';
