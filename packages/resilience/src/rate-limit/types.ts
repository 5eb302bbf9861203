import type { Clock, EventEmitter, StratusEvent } from '@stratus/core';

/** The answer of a rate limiter to one request for `cost` permits under one key. */
export interface RateLimitResult {
  /** Whether the permits were granted (and consumed). */
  readonly allowed: boolean;
  /** The most permits the key can hold at once: the quota of a window, a bucket's capacity, a burst. */
  readonly limit: number;
  /** Permits the key has left right now (after this request, when it was allowed). */
  readonly remaining: number;
  /** Milliseconds until the key is back to its full quota if it makes no more requests; 0 when it is. */
  readonly resetMs: number;
  /**
   * 0 when allowed. When refused: milliseconds until the same request can succeed (Infinity when it never
   * can, e.g. a cost above the limit, or a concurrency permit held without expiry).
   */
  readonly retryAfterMs: number;
  /** Concurrency limiters only: the permits held, to release when the work is done. */
  readonly lease?: Lease;
}

/** Permits held from a concurrency limiter. Releasing twice is harmless. */
export interface Lease {
  readonly id: string;
  readonly cost: number;
  release(): Promise<void>;
}

/** A keyed limiter (per tenant, per user, per IP): each key has its own quota. */
export interface RateLimiter {
  readonly name: string;
  /** 'fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra' or 'concurrency'. */
  readonly algorithm: string;
  /** The largest `limit` any key can have (what RateLimit-Policy advertises as its quota). */
  readonly limit: number;
  /** The window the quota refers to (for RateLimit-Policy `w`); undefined for a concurrency limiter. */
  readonly windowMs: number | undefined;
  /** Where the counters live: 'memory', 'redis' or 'postgres'. */
  readonly store: string;
  /** Permits are held until released (a concurrency limiter), rather than given back as time passes. */
  readonly leased: boolean;
  readonly events: EventEmitter<RateLimiterEvent>;
  /** Requests `cost` permits (integer >= 0, default 1; 0 only reads the state) for `key`. */
  acquire(key: string, cost?: number): Promise<RateLimitResult>;
  /** Forgets everything about `key` (its quota is full again; leases it held are dropped). */
  reset(key: string): Promise<void>;
}

/** A limiter whose counters live in this process: it can answer synchronously. */
export interface LocalRateLimiter extends RateLimiter {
  readonly store: 'memory';
  tryAcquire(key: string, cost?: number): RateLimitResult;
  /** Keys held in memory right now (idle keys are dropped as the map grows). */
  readonly size: number;
}

/**
 * Throttling's degrade option: when a key's usage (the share of its limit in use) reaches `threshold`, the
 * limiter says so once (`soft-limit` event and `onChange`); when usage falls below `clearBelow` it says so
 * again (`soft-limit-cleared`), so an application can switch non-essential features off and on.
 */
export interface SoftLimitOptions {
  /** Usage ratio in (0, 1] at which the soft limit engages, e.g. 0.8. */
  threshold: number;
  /** Usage ratio in [0, threshold] below which it clears again (hysteresis); default `threshold`. */
  clearBelow?: number;
  onChange?: (event: SoftLimitEvent | SoftLimitClearedEvent) => void;
}

/** Options every limiter factory takes. */
export interface LimiterOptions {
  /**
   * Names the limit. In a shared store (Redis, PostgreSQL) limiters with the same name and algorithm share
   * their counters, which is how several processes enforce one limit. Default: the algorithm's name.
   */
  name?: string;
  /** Time of the in-memory store and of the soft-limit timers; default systemClock. */
  clock?: Clock;
  softLimit?: SoftLimitOptions;
}

interface RateLimiterEventBase extends StratusEvent {
  readonly component: 'rate-limiter';
  readonly key: string;
}

export interface LimitedEvent extends RateLimiterEventBase {
  readonly type: 'limited';
  readonly cost: number;
  readonly limit: number;
  readonly retryAfterMs: number;
}

export interface SoftLimitEvent extends RateLimiterEventBase {
  readonly type: 'soft-limit';
  readonly usage: number;
  readonly threshold: number;
}

export interface SoftLimitClearedEvent extends RateLimiterEventBase {
  readonly type: 'soft-limit-cleared';
  readonly usage: number;
}

export type RateLimiterEvent = LimitedEvent | SoftLimitEvent | SoftLimitClearedEvent;
