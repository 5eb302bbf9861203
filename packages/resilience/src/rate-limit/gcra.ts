import { assertDuration, assertInteger, assertObject } from '@stratus/core';
import { type Algorithm, type PostgresProgram, type RedisProgram, TIME_EPSILON_MS } from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface GcraOptions extends LimiterOptions, StoreOption {
  /** Permits per `periodMs`: the sustained rate (integer >= 1). */
  limit: number;
  periodMs: number;
  /** Permits a key may take at once after being idle (integer >= 1); default `limit`. */
  burst?: number;
}

/**
 * GCRA (generic cell rate algorithm, as in ATM networks and redis-cell): one timestamp per key, the
 * theoretical arrival time (TAT) of the next request if the key used its rate exactly. A request is
 * admitted when it does not push the TAT more than `burst` emission intervals past now. Equivalent to a
 * token bucket of `burst` tokens refilled at limit/periodMs, with the smallest state of all (one number).
 */
export function gcra(options: GcraOptions & { store?: MemoryRateLimitStore }): LocalRateLimiter;
export function gcra(options: GcraOptions): RateLimiter;
export function gcra(options: GcraOptions): RateLimiter {
  return createLimiter(new Gcra(options), options);
}

interface GcraState {
  /** Theoretical arrival time. */
  tat: number;
}

const lua = `
local tat = now
local state = redis.call('GET', key)
if state then tat = math.max(now, struct.unpack('<d', state)) end
local candidate = tat + cost * period / limit
local ok = 0
if candidate - now <= burst * period / limit + ${TIME_EPSILON_MS} then
  ok = 1
  tat = candidate
  -- Expiry only collects idle keys (the state carries its own times), so a margin is harmless and keeps
  -- state alive when an injected clock runs apart from the server's.
  redis.call('SET', key, struct.pack('<d', tat), 'PX', math.max(1, math.ceil(tat - now)) + 1000)
end
return struct.pack('<ddd', ok, now, tat)
`;

const redis: RedisProgram = { name: 'gcra', params: ['limit', 'period', 'burst'], lua };

const postgres: PostgresProgram = {
  table: 'gcra',
  columns: [['tat', 'float8']],
  transition: (x) => {
    const [limit, period, burst] = [x.param(0), x.param(1), x.param(2)];
    return `
    , LATERAL (SELECT greatest(coalesce(prev.tat, ${x.now}), ${x.now}) AS tat) b
    , LATERAL (SELECT b.tat + ${x.cost} * ${period} / ${limit} AS next) n
    , LATERAL (SELECT n.next - ${x.now} <= ${burst} * ${period} / ${limit} + ${TIME_EPSILON_MS} AS ok) o
    , LATERAL (SELECT CASE WHEN o.ok THEN n.next ELSE b.tat END AS tat) r
    , LATERAL (SELECT r.tat, o.ok, r.tat AS expires_at) s`;
  },
  returning: () => ['t.tat'],
};

class Gcra implements Algorithm<GcraState> {
  readonly kind = 'gcra';
  readonly leased = false;
  /** The burst: the most permits a key can hold. */
  readonly limit: number;
  readonly windowMs: number;
  readonly params: readonly number[];
  readonly redis = redis;
  readonly postgres = postgres;
  readonly #rateLimit: number;
  readonly #period: number;

  constructor(options: GcraOptions) {
    assertObject('options', options as unknown);
    assertInteger('limit', options.limit, 1);
    assertDuration('periodMs', options.periodMs, { allowZero: false });
    const burst = options.burst ?? options.limit;
    assertInteger('burst', burst, 1);
    this.#rateLimit = options.limit;
    this.#period = options.periodMs;
    this.limit = burst;
    this.windowMs = this.#intervals(burst);
    this.params = [this.#rateLimit, this.#period, burst];
  }

  create(now: number): GcraState {
    return { tat: now };
  }

  consume(state: GcraState, now: number, cost: number): RateLimitResult {
    const tat = Math.max(state.tat, now);
    const next = tat + this.#intervals(cost);
    const ok = next - now <= this.windowMs + TIME_EPSILON_MS;
    state.tat = ok ? next : tat;
    return this.#result(ok, now, cost, state.tat);
  }

  idleAt(state: GcraState): number {
    return state.tat;
  }

  decode(values: readonly number[], cost: number): RateLimitResult {
    return this.#result(values[0] === 1, values[1]!, cost, values[2]!);
  }

  /** `count` emission intervals (periodMs / limit each), in ms. */
  #intervals(count: number): number {
    return (count * this.#period) / this.#rateLimit;
  }

  #result(ok: boolean, now: number, cost: number, tat: number): RateLimitResult {
    const ahead = tat > now ? tat - now : 0;
    return {
      allowed: ok,
      limit: this.limit,
      // Whole intervals of the burst tolerance not yet used, with the same slack as the admission test.
      remaining: Math.max(
        0,
        Math.floor(((this.windowMs - ahead + TIME_EPSILON_MS) * this.#rateLimit) / this.#period),
      ),
      resetMs: ahead,
      retryAfterMs: ok
        ? 0
        : cost > this.limit
          ? Number.POSITIVE_INFINITY
          : Math.max(0, ahead + this.#intervals(cost) - this.windowMs),
    };
  }
}
