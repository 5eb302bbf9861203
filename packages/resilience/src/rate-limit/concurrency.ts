import { assertDuration, assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import type { Algorithm, PostgresProgram, RedisProgram } from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { Lease, LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface ConcurrencyLimitOptions extends LimiterOptions, StoreOption {
  /** Permits a key may hold at once (integer >= 1). */
  maxInFlight: number;
  /**
   * A lease not released within this long is given back anyway, so a process that crashed while holding
   * permits cannot leak them. Must be finite on a shared store; default 60 000 there, Infinity in memory
   * (a process's own permits die with it).
   */
  leaseMs?: number;
}

/**
 * Concurrency limiter: at most `maxInFlight` permits held per key at once. An allowed result carries a
 * `lease`; release it when the work is done. A refusal's `retryAfterMs` is when the oldest lease expires
 * (Infinity without expiry): a bound for planning, since holders usually release much sooner.
 */
export function concurrencyLimit(
  options: ConcurrencyLimitOptions & { store?: MemoryRateLimitStore },
): LocalRateLimiter;
export function concurrencyLimit(options: ConcurrencyLimitOptions): RateLimiter;
export function concurrencyLimit(options: ConcurrencyLimitOptions): RateLimiter {
  return createLimiter(new Concurrency(options), options);
}

interface HeldLease {
  readonly cost: number;
  readonly expiresAt: number;
}

interface ConcurrencyState {
  inFlight: number;
  /** In order of acquisition, which (with a monotonic clock and one leaseMs) is the order of expiry. */
  readonly leases: Map<string, HeldLease>;
  latestExpiry: number;
}

// One sorted-set member per permit, "<lease id>:<n>", scored by its expiry.
const lua = `
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local in_flight = redis.call('ZCARD', key)
local ok = 0
if in_flight + cost <= max then
  ok = 1
  if cost > 0 then
    local expires = now + lease_ms
    local args = {}
    for i = 1, cost do
      args[#args + 1] = expires
      args[#args + 1] = lease .. ':' .. i
    end
    redis.call('ZADD', key, unpack(args))
    in_flight = in_flight + cost
    if redis.call('PTTL', key) < lease_ms then redis.call('PEXPIRE', key, math.ceil(lease_ms)) end
  end
end
local earliest = 0
local latest = 0
if in_flight > 0 then
  earliest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
  latest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
end
return struct.pack('<ddddd', ok, now, in_flight, earliest, latest)
`;

const releaseLua = `
local members = {}
for i = 1, cost do members[#members + 1] = lease .. ':' .. i end
if #members > 0 then redis.call('ZREM', key, unpack(members)) end
return 0
`;

const redis: RedisProgram = { name: 'concurrency', params: ['max', 'lease_ms'], lua, releaseLua };

/** Leases as a jsonb object: { "<lease id>": [expiresAt, cost] }. */
const sumOf = (leases: string) =>
  `(SELECT coalesce(sum((e.value->>1)::float8), 0) FROM jsonb_each(${leases}) AS e)`;
const expiryOf = (aggregate: 'min' | 'max', leases: string) =>
  `(SELECT coalesce(${aggregate}((e.value->>0)::float8), 0) FROM jsonb_each(${leases}) AS e)`;

const postgres: PostgresProgram = {
  table: 'concurrency',
  columns: [['leases', 'jsonb']],
  transition: (x) => {
    const [max, leaseMs] = [x.param(0), x.param(1)];
    return `
    , LATERAL (SELECT coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(prev.leases) AS e
                                WHERE (e.value->>0)::float8 > ${x.now}), '{}'::jsonb) AS kept) k
    , LATERAL (SELECT ${sumOf('k.kept')} + ${x.cost} <= ${max} AS ok) o
    , LATERAL (SELECT CASE WHEN o.ok AND ${x.cost} > 0
                        THEN k.kept || jsonb_build_object(${x.lease}, jsonb_build_array(${x.now} + ${leaseMs}, ${x.cost}))
                        ELSE k.kept END AS leases) l
    , LATERAL (SELECT l.leases, o.ok, greatest(${expiryOf('max', 'l.leases')}, ${x.now}) AS expires_at) s`;
  },
  returning: () => [sumOf('t.leases'), expiryOf('min', 't.leases'), expiryOf('max', 't.leases')],
  release: (table) => `UPDATE ${table} SET leases = leases - $2::text WHERE key = $1::text`,
};

class Concurrency implements Algorithm<ConcurrencyState> {
  readonly kind = 'concurrency';
  readonly leased = true;
  readonly limit: number;
  readonly windowMs = undefined;
  readonly params: readonly number[];
  readonly redis = redis;
  readonly postgres = postgres;
  readonly #leaseMs: number;

  constructor(options: ConcurrencyLimitOptions) {
    assertObject('options', options as unknown);
    assertInteger('maxInFlight', options.maxInFlight, 1);
    const shared = options.store !== undefined && options.store.kind !== 'memory';
    const leaseMs = options.leaseMs ?? (shared ? 60_000 : Number.POSITIVE_INFINITY);
    if (leaseMs !== Number.POSITIVE_INFINITY) assertDuration('leaseMs', leaseMs, { allowZero: false });
    else if (shared) {
      throw new InvalidOptionsError(
        'leaseMs',
        'must be finite on a shared store, or a crashed holder leaks permits',
      );
    }
    this.limit = options.maxInFlight;
    this.#leaseMs = leaseMs;
    this.params = [this.limit, leaseMs];
  }

  create(): ConcurrencyState {
    return { inFlight: 0, leases: new Map(), latestExpiry: 0 };
  }

  consume(state: ConcurrencyState, now: number, cost: number, lease: Lease | undefined): RateLimitResult {
    this.#expire(state, now);
    const ok = state.inFlight + cost <= this.limit;
    if (ok && cost > 0 && lease !== undefined) {
      state.latestExpiry = now + this.#leaseMs;
      state.leases.set(lease.id, { cost, expiresAt: state.latestExpiry });
      state.inFlight += cost;
    }
    const earliest = state.inFlight > 0 ? (state.leases.values().next().value as HeldLease).expiresAt : 0;
    return this.#result(ok, now, cost, state.inFlight, earliest, state.latestExpiry, lease);
  }

  release(state: ConcurrencyState, leaseId: string): void {
    const held = state.leases.get(leaseId);
    if (held === undefined) return;
    state.leases.delete(leaseId);
    state.inFlight -= held.cost;
  }

  idleAt(state: ConcurrencyState): number {
    return state.inFlight > 0 ? state.latestExpiry : Number.NEGATIVE_INFINITY;
  }

  decode(values: readonly number[], cost: number, lease: Lease | undefined): RateLimitResult {
    return this.#result(values[0] === 1, values[1]!, cost, values[2]!, values[3]!, values[4]!, lease);
  }

  #expire(state: ConcurrencyState, now: number): void {
    if (this.#leaseMs === Number.POSITIVE_INFINITY) return;
    for (const [id, held] of state.leases) {
      if (held.expiresAt > now) return;
      state.leases.delete(id);
      state.inFlight -= held.cost;
    }
  }

  #result(
    ok: boolean,
    now: number,
    cost: number,
    inFlight: number,
    earliestExpiry: number,
    latestExpiry: number,
    lease: Lease | undefined,
  ): RateLimitResult {
    return {
      allowed: ok,
      limit: this.limit,
      remaining: Math.max(0, this.limit - inFlight),
      resetMs: inFlight > 0 ? latestExpiry - now : 0,
      retryAfterMs: ok ? 0 : cost > this.limit ? Number.POSITIVE_INFINITY : Math.max(0, earliestExpiry - now),
      lease: ok ? lease : undefined,
    };
  }
}
