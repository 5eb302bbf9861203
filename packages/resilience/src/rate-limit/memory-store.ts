import { assertInteger, assertObject, type Clock, type EventEmitter } from '@stratus/core';
import { type Algorithm, assertCost, type BindOptions, type RateLimitStore } from './algorithm.js';
import { LimiterObserver } from './observer.js';
import type { Lease, LocalRateLimiter, RateLimiterEvent, RateLimitResult } from './types.js';

export interface MemoryRateLimitStoreOptions {
  /**
   * Keys held before idle ones are first swept (default 1024). A sweep drops every key whose state is as
   * good as new, and the next one waits until the map has doubled, so memory follows the number of keys
   * active within a window and the sweeping costs O(1) per new key.
   */
  minSweepSize?: number;
}

/** Counters in this process's memory: synchronous `tryAcquire`, nothing shared with other processes. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = 'memory';
  readonly #minSweepSize: number;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    assertObject('options', options as unknown);
    this.#minSweepSize = options.minSweepSize ?? 1024;
    assertInteger('minSweepSize', this.#minSweepSize, 1);
  }

  bind(algorithm: Algorithm<unknown>, options: BindOptions): LocalRateLimiter {
    return new MemoryRateLimiter(algorithm, options, this.#minSweepSize);
  }
}

const resolved = Promise.resolve();

class MemoryRateLimiter<S> implements LocalRateLimiter {
  readonly store = 'memory';
  readonly name: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number | undefined;
  readonly leased: boolean;
  readonly #algorithm: Algorithm<S>;
  readonly #clock: Clock;
  readonly #observer: LimiterObserver;
  readonly #states = new Map<string, S>();
  readonly #minSweepSize: number;
  #sweepAt: number;
  #leaseSeq = 0;

  constructor(algorithm: Algorithm<S>, options: BindOptions, minSweepSize: number) {
    this.#algorithm = algorithm;
    this.algorithm = algorithm.kind;
    this.limit = algorithm.limit;
    this.windowMs = algorithm.windowMs;
    this.leased = algorithm.leased;
    this.name = options.name;
    this.#clock = options.clock;
    this.#observer = new LimiterObserver(options.name, options.clock, options.softLimit);
    this.#minSweepSize = minSweepSize;
    this.#sweepAt = minSweepSize;
  }

  get events(): EventEmitter<RateLimiterEvent> {
    return this.#observer.events;
  }

  get size(): number {
    return this.#states.size;
  }

  tryAcquire(key: string, cost = 1): RateLimitResult {
    if (cost !== 1) assertCost(cost);
    const now = this.#clock.monotonic();
    let state = this.#states.get(key);
    if (state === undefined) {
      if (this.#states.size >= this.#sweepAt) this.#sweep(now);
      state = this.#algorithm.create(now);
      this.#states.set(key, state);
    }
    const lease = this.#algorithm.leased
      ? new MemoryLease(this, key, String(++this.#leaseSeq), cost)
      : undefined;
    const result = this.#algorithm.consume(state, now, cost, lease);
    this.#observer.observe(key, cost, result);
    return result;
  }

  acquire(key: string, cost?: number): Promise<RateLimitResult> {
    try {
      return Promise.resolve(this.tryAcquire(key, cost));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  reset(key: string): Promise<void> {
    this.#states.delete(key);
    this.#observer.forget(key);
    return resolved;
  }

  release(key: string, leaseId: string): void {
    const state = this.#states.get(key);
    if (state !== undefined) this.#algorithm.release?.(state, leaseId);
  }

  #sweep(now: number): void {
    for (const [key, state] of this.#states) {
      if (this.#algorithm.idleAt(state) <= now) this.#states.delete(key);
    }
    this.#sweepAt = Math.max(this.#minSweepSize, 2 * this.#states.size);
  }
}

class MemoryLease implements Lease {
  #released = false;

  constructor(
    readonly owner: MemoryRateLimiter<unknown>,
    readonly key: string,
    readonly id: string,
    readonly cost: number,
  ) {}

  release(): Promise<void> {
    if (!this.#released) {
      this.#released = true;
      this.owner.release(this.key, this.id);
    }
    return resolved;
  }
}
