import { assertObject, type Clock, describeValue, InvalidOptionsError, systemClock } from '@stratus/core';
import type { Algorithm, RateLimitStore } from './algorithm.js';
import { MemoryRateLimitStore } from './memory-store.js';
import { validateSoftLimit } from './observer.js';
import type { LimiterOptions, RateLimiter } from './types.js';

/** The store option every limiter factory takes; without it the counters live in this process's memory. */
export interface StoreOption {
  store?: RateLimitStore;
}

const defaultMemoryStore = new MemoryRateLimitStore();

/** Validates the options common to every limiter and binds `algorithm` to its store. */
export function createLimiter(
  algorithm: Algorithm<unknown>,
  options: LimiterOptions & StoreOption,
): RateLimiter {
  const name = options.name ?? algorithm.kind;
  // Stores key counters as "<name>:<key>": a ':' in the name could make two limiters share one counter.
  if (typeof name !== 'string' || name === '' || name.includes(':'))
    throw new InvalidOptionsError(
      'name',
      `expected a non-empty string without ':', got ${describeValue(name)}`,
    );
  const clock: Clock = options.clock ?? systemClock;
  assertObject('clock', clock);
  validateSoftLimit(options.softLimit);
  const store = options.store ?? defaultMemoryStore;
  if (typeof (store as { bind?: unknown }).bind !== 'function') {
    throw new InvalidOptionsError(
      'store',
      'expected new MemoryRateLimitStore(), new RedisRateLimitStore(...) or new PostgresRateLimitStore(...)',
    );
  }
  return store.bind(algorithm, { name, clock, softLimit: options.softLimit });
}
