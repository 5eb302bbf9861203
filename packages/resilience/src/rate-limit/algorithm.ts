import { assertDuration, assertInteger, assertObject } from '@stratus/core';
import type { Lease, LimiterOptions, RateLimiter, RateLimitResult } from './types.js';

/**
 * One rate-limiting algorithm, written once per store: in TypeScript for the in-memory store, in Lua for
 * Redis (one atomic script), in SQL for PostgreSQL (one atomic upsert). All three apply the same state
 * transition; the result (remaining, reset, retry-after) is derived in TypeScript from what they return,
 * so the arithmetic that callers see is shared.
 */
export interface Algorithm<S> {
  readonly kind: string;
  readonly limit: number;
  readonly windowMs: number | undefined;
  /** Permits are held until released (concurrency), rather than given back by time passing. */
  readonly leased: boolean;
  /** Numeric parameters handed to the Lua script (ARGV[4..]) and to the SQL (`param(i)`), in order. */
  readonly params: readonly number[];
  readonly redis: RedisProgram;
  readonly postgres: PostgresProgram;

  /** In-memory state of a key never seen (or idle long enough to be forgotten). */
  create(now: number): S;
  /** Applies a request for `cost` permits at `now` to `state` (mutating it) and answers. */
  consume(state: S, now: number, cost: number, lease: Lease | undefined): RateLimitResult;
  /** The time from which `state` is as good as new, so an idle key can be dropped. */
  idleAt(state: S): number;
  /** Gives a lease's permits back (leased algorithms only). */
  release?(state: S, leaseId: string): void;
  /**
   * The result of a store's reply: `values` are [ok (1 or 0), now, ...the program's returned values], all
   * numbers. `lease` is the lease to hand out when the request was allowed (leased algorithms only).
   */
  decode(values: readonly number[], cost: number, lease: Lease | undefined): RateLimitResult;
}

/**
 * The Lua body of an algorithm. The store prepends locals: `key` (KEYS[1]), `cost`, `now` (epoch ms, from
 * the caller or the server's TIME), `lease` (leased algorithms) and the parameters as constants named by
 * `params`, so a call sends only the key and the cost (the store's Redis CPU, not the network, is what a
 * busy limiter runs out of). Small states are packed doubles in a string (one GET, one SET with PX): exact,
 * and cheaper than numbers formatted as text. The script returns `struct.pack('<dd...', ok, now, ...)`.
 */
export interface RedisProgram {
  readonly name: string;
  /** Lua names of Algorithm.params, in order. */
  readonly params: readonly string[];
  readonly lua: string;
  /** Leased algorithms: the Lua body releasing the lease `lease` of `cost` permits from `key`. */
  readonly releaseLua?: string;
}

/** Placeholders the store fills in: expressions for the request's inputs. */
export interface SqlTerms {
  /** Epoch ms (float8): the caller's clock or the server's statement time. */
  readonly now: string;
  readonly cost: string;
  /** The lease id (text); leased algorithms only. */
  readonly lease: string;
  /** The i-th numeric parameter (float8). */
  param(index: number): string;
}

/**
 * The SQL of an algorithm. The store runs, as one statement:
 *   INSERT INTO <table> AS t (key, <columns>, ok, expires_at)
 *   SELECT <key>, s.<columns>, s.ok, s.expires_at FROM (SELECT NULL AS <column>, ...) prev <transition>
 *   ON CONFLICT (key) DO UPDATE SET (<columns>, ok, expires_at) =
 *     (SELECT s.<columns>, s.ok, s.expires_at FROM (SELECT t.<column>, ...) prev <transition>)
 *   RETURNING t.ok, <now>, <returning>
 * so the transition is written once, over a `prev` row that is all NULL for a new key. The row lock that
 * ON CONFLICT takes makes it atomic under any concurrency.
 */
export interface PostgresProgram {
  /** Table name suffix: the table is `<tablePrefix>_<table>`. */
  readonly table: string;
  /** State columns and their SQL types. */
  readonly columns: readonly (readonly [name: string, type: string])[];
  /** FROM items (each starting with a comma) that end in a relation `s` with the columns, `ok`, `expires_at`. */
  transition(terms: SqlTerms): string;
  /** Expressions over the stored row `t`, returned after ok and now (as float8). */
  returning(terms: SqlTerms): readonly string[];
  /** Releases a lease: an UPDATE of the row `$1` with lease id `$2` (leased algorithms only). */
  readonly release?: (table: string) => string;
}

/** Common options after validation, handed to a store when it builds the limiter. */
export interface BindOptions extends Required<Pick<LimiterOptions, 'name' | 'clock'>> {
  readonly softLimit: LimiterOptions['softLimit'];
}

/** Where a limiter keeps its counters: new MemoryRateLimitStore(), new RedisRateLimitStore(...) or new PostgresRateLimitStore(...). */
export interface RateLimitStore {
  readonly kind: string;
  /** Builds a limiter running `algorithm` on this store (called by the limiter factories). */
  bind(algorithm: Algorithm<unknown>, options: BindOptions): RateLimiter;
}

/**
 * Slack for comparisons of fractional permits (a bucket refilled for 200 ms at 5 per second holds
 * 0.9999999999999999 tokens in floating point, and must admit a request for 1).
 */
export const EPSILON = 1e-9;

/**
 * Slack for comparisons of times computed from epoch milliseconds: around 1.8e12 a double resolves only
 * 0.00024 ms, so a time stored as `now + 333.33...` comes back a fraction of a microsecond off.
 */
export const TIME_EPSILON_MS = 1e-3;

/** Checks a request's cost (the hot path skips this for the default cost of 1). */
export function assertCost(cost: number): void {
  assertInteger('cost', cost, 0);
}

/** Whole permits left out of a fractional amount, never negative. */
export function wholePermits(amount: number): number {
  return amount <= 0 ? 0 : Math.floor(amount + EPSILON);
}

/** Options of the algorithms that allow `limit` permits per `windowMs`. */
export interface LimitPerWindowOptions {
  /** Permits per window (integer >= 1). */
  limit: number;
  /** The window in ms (> 0). */
  windowMs: number;
}

/** What the fixed window and both sliding windows share: validated `limit` per `windowMs`, handed to the stores. */
export abstract class LimitPerWindow<S> implements Algorithm<S> {
  abstract readonly kind: string;
  abstract readonly redis: RedisProgram;
  abstract readonly postgres: PostgresProgram;
  readonly leased = false;
  readonly limit: number;
  readonly windowMs: number;
  readonly params: readonly number[];

  constructor(options: LimitPerWindowOptions, maxLimit?: number) {
    assertObject('options', options as unknown);
    assertInteger('limit', options.limit, 1, maxLimit);
    assertDuration('windowMs', options.windowMs, { allowZero: false });
    this.limit = options.limit;
    this.windowMs = options.windowMs;
    this.params = [this.limit, this.windowMs];
  }

  abstract create(now: number): S;
  abstract consume(state: S, now: number, cost: number, lease: Lease | undefined): RateLimitResult;
  abstract idleAt(state: S): number;
  abstract decode(values: readonly number[], cost: number, lease: Lease | undefined): RateLimitResult;
}
