import { StratusError } from '@stratus/core';

/** A call to the shared store took longer than `storeTimeoutMs`: the cache went on without the store. */
export class CacheStoreTimeoutError extends StratusError {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super('ERR_STRATUS_CACHE_STORE_TIMEOUT', `Cache store ${operation} timed out after ${timeoutMs} ms`);
  }
}
