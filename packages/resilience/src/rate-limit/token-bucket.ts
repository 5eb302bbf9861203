import {
  assertDuration,
  assertInteger,
  assertNumber,
  assertObject,
  InvalidOptionsError,
} from '@stratus/core';
import {
  type Algorithm,
  EPSILON,
  type PostgresProgram,
  type RedisProgram,
  wholePermits,
} from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface TokenBucketOptions extends LimiterOptions, StoreOption {
  /** Tokens the bucket holds when full: the largest burst (integer >= 1). A new key starts full. */
  capacity: number;
  /** Tokens added per `refillIntervalMs` (> 0; fractional rates are fine), continuously, up to capacity. */
  refillRate: number;
  /** The period `refillRate` refers to; default 1000 (tokens per second). */
  refillIntervalMs?: number;
}

/**
 * Token bucket: each key has a bucket of `capacity` tokens refilled continuously at `refillRate` per
 * `refillIntervalMs`; a request takes `cost` tokens or is refused. Allows bursts up to the capacity, and a
 * sustained rate of exactly the refill rate.
 */
export function tokenBucket(options: TokenBucketOptions & { store?: MemoryRateLimitStore }): LocalRateLimiter;
export function tokenBucket(options: TokenBucketOptions): RateLimiter;
export function tokenBucket(options: TokenBucketOptions): RateLimiter {
  return createLimiter(new TokenBucket(options), options);
}

interface BucketState {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  at: number;
}

const lua = `
local tokens, at = capacity, now
local state = redis.call('GET', key)
if state then tokens, at = struct.unpack('<dd', state) end
-- Refill for the time passed; a clock behind the last update adds nothing.
if now > at then
  tokens = math.min(capacity, tokens + (now - at) * rate / interval)
  at = now
end
local ok = 0
if tokens + ${EPSILON} >= cost then
  ok = 1
  tokens = math.max(0, tokens - cost)
  local full_in = (capacity - tokens) * interval / rate
  -- Expiry only collects idle keys (the state carries its own times), so a margin is harmless and keeps
  -- state alive when an injected clock runs apart from the server's.
  redis.call('SET', key, struct.pack('<dd', tokens, at), 'PX', math.max(1, math.ceil(full_in)) + 1000)
end
return struct.pack('<ddd', ok, now, tokens)
`;

const redis: RedisProgram = { name: 'token-bucket', params: ['capacity', 'rate', 'interval'], lua };

const postgres: PostgresProgram = {
  table: 'token_bucket',
  columns: [
    ['tokens', 'float8'],
    ['at', 'float8'],
  ],
  transition: (x) => {
    const [capacity, rate, interval] = [x.param(0), x.param(1), x.param(2)];
    return `
    , LATERAL (SELECT coalesce(prev.tokens, ${capacity}) AS tokens, coalesce(prev.at, ${x.now}) AS at) b
    , LATERAL (SELECT CASE WHEN ${x.now} > b.at
                        THEN least(${capacity}, b.tokens + (${x.now} - b.at) * ${rate} / ${interval})
                        ELSE b.tokens END AS tokens,
                      greatest(b.at, ${x.now}) AS at) r
    , LATERAL (SELECT r.tokens + ${EPSILON} >= ${x.cost} AS ok) o
    , LATERAL (SELECT CASE WHEN o.ok THEN greatest(0, r.tokens - ${x.cost}) ELSE r.tokens END AS tokens) n
    , LATERAL (SELECT n.tokens, r.at, o.ok,
                      r.at + (${capacity} - n.tokens) * ${interval} / ${rate} AS expires_at) s`;
  },
  returning: () => ['t.tokens'],
};

class TokenBucket implements Algorithm<BucketState> {
  readonly kind = 'token-bucket';
  readonly leased = false;
  readonly limit: number;
  readonly windowMs: number;
  readonly params: readonly number[];
  readonly redis = redis;
  readonly postgres = postgres;
  readonly #rate: number;
  readonly #interval: number;

  constructor(options: TokenBucketOptions) {
    assertObject('options', options as unknown);
    assertInteger('capacity', options.capacity, 1);
    assertNumber('refillRate', options.refillRate, 0);
    if (options.refillRate === 0) throw new InvalidOptionsError('refillRate', 'expected a positive number');
    const interval = options.refillIntervalMs ?? 1000;
    assertDuration('refillIntervalMs', interval, { allowZero: false });
    this.limit = options.capacity;
    this.#rate = options.refillRate;
    this.#interval = interval;
    // The time an empty bucket takes to fill: the window the capacity refers to.
    this.windowMs = this.#msFor(this.limit);
    this.params = [this.limit, this.#rate, this.#interval];
  }

  create(now: number): BucketState {
    return { tokens: this.limit, at: now };
  }

  consume(state: BucketState, now: number, cost: number): RateLimitResult {
    if (now > state.at) {
      state.tokens = Math.min(this.limit, state.tokens + ((now - state.at) * this.#rate) / this.#interval);
      state.at = now;
    }
    const ok = state.tokens + EPSILON >= cost;
    if (ok) state.tokens = Math.max(0, state.tokens - cost);
    return this.#result(ok, cost, state.tokens);
  }

  idleAt(state: BucketState): number {
    return state.at + this.#msFor(this.limit - state.tokens);
  }

  decode(values: readonly number[], cost: number): RateLimitResult {
    return this.#result(values[0] === 1, cost, values[2]!);
  }

  /** Time to refill `tokens`. */
  #msFor(tokens: number): number {
    return (tokens * this.#interval) / this.#rate;
  }

  #result(ok: boolean, cost: number, tokens: number): RateLimitResult {
    const missing = this.limit - tokens;
    return {
      allowed: ok,
      limit: this.limit,
      remaining: wholePermits(tokens),
      resetMs: missing > EPSILON ? this.#msFor(missing) : 0,
      retryAfterMs: ok ? 0 : cost > this.limit ? Number.POSITIVE_INFINITY : this.#msFor(cost - tokens),
    };
  }
}
