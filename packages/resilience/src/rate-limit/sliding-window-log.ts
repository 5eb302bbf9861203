import { LimitPerWindow, type PostgresProgram, type RedisProgram } from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface SlidingWindowLogOptions extends LimiterOptions, StoreOption {
  /** Permits per sliding window (integer in 1..100 000: the log holds one timestamp per permit). */
  limit: number;
  windowMs: number;
}

/** The log keeps a timestamp per permit; past this, use slidingWindowCounter. */
const MAX_LOG_LIMIT = 100_000;

/**
 * Sliding window, exact: each key keeps the timestamps of the permits it was granted in the last
 * `windowMs`, so in ANY window (t − windowMs, t] at most `limit` permits are granted, with no edge burst.
 * Memory and store space are O(limit) per key (a ring buffer in memory, a sorted set in Redis, an array in
 * PostgreSQL), so it is meant for small limits; slidingWindowCounter approximates it in O(1).
 */
export function slidingWindowLog(
  options: SlidingWindowLogOptions & { store?: MemoryRateLimitStore },
): LocalRateLimiter;
export function slidingWindowLog(options: SlidingWindowLogOptions): RateLimiter;
export function slidingWindowLog(options: SlidingWindowLogOptions): RateLimiter {
  return createLimiter(new SlidingWindowLog(options), options);
}

/**
 * Timestamps in a growable ring buffer, oldest first. The memory store's clock is monotonic, so appending
 * keeps them sorted.
 */
class TimestampLog {
  times: Float64Array;
  head = 0;
  size = 0;

  constructor(capacity: number) {
    this.times = new Float64Array(capacity);
  }

  at(index: number): number {
    return this.times[(this.head + index) % this.times.length]!;
  }

  dropOldest(): void {
    this.head = (this.head + 1) % this.times.length;
    this.size--;
  }

  append(time: number, count: number, maxCapacity: number): void {
    if (this.size + count > this.times.length)
      this.#grow(Math.min(maxCapacity, Math.max(2 * this.times.length, this.size + count)));
    for (let i = 0; i < count; i++) this.times[(this.head + this.size++) % this.times.length] = time;
  }

  #grow(capacity: number): void {
    const times = new Float64Array(capacity);
    for (let i = 0; i < this.size; i++) times[i] = this.at(i);
    this.times = times;
    this.head = 0;
  }
}

// Members of the sorted set are "<time>:<n>": n counts the members already at that exact time, which are
// always 0..n-1 because trimming by score removes all members of a time at once; so members never collide,
// even when processes with skewed clocks write the same time.
const lua = `
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local size = redis.call('ZCARD', key)
local ok = 0
if size + cost <= limit then
  ok = 1
  if cost > 0 then
    local stamp = string.format('%.17g', now)
    local taken = redis.call('ZCOUNT', key, stamp, stamp)
    local args = {}
    for i = 0, cost - 1 do
      args[#args + 1] = stamp
      args[#args + 1] = stamp .. ':' .. (taken + i)
      if #args >= 1000 then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', key, unpack(args)) end
    size = size + cost
  end
end
local newest = 0
if size > 0 then newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
if ok == 1 and size > 0 then redis.call('PEXPIRE', key, math.max(1, math.ceil(newest + window - now)) + 1000) end
-- Refused: the permit that has to slide out before this request fits.
local blocking = 0
if ok == 0 and cost <= limit then
  local index = size + cost - limit - 1
  blocking = tonumber(redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2])
end
return struct.pack('<ddddd', ok, now, size, newest, blocking)
`;

const redis: RedisProgram = { name: 'sliding-window-log', params: ['limit', 'window'], lua };

const postgres: PostgresProgram = {
  table: 'sliding_window_log',
  columns: [['log', 'float8[]']],
  transition: (x) => {
    const [limit, window] = [x.param(0), x.param(1)];
    return `
    , LATERAL (SELECT array(SELECT v FROM unnest(prev.log) AS v WHERE v > ${x.now} - ${window} ORDER BY v) AS kept) k
    , LATERAL (SELECT cardinality(k.kept) + ${x.cost} <= ${limit} AS ok) o
    , LATERAL (SELECT CASE WHEN o.ok THEN k.kept || array_fill(${x.now}, ARRAY[${x.cost}::int]) ELSE k.kept END AS log) l
    , LATERAL (SELECT l.log, o.ok,
                      coalesce((SELECT max(v) FROM unnest(l.log) AS v), ${x.now}) + ${window} AS expires_at) s`;
  },
  returning: (x) => {
    const limit = x.param(0);
    return [
      'cardinality(t.log)',
      'coalesce((SELECT max(v) FROM unnest(t.log) AS v), 0)',
      // A refused request left the log as trimmed: sorted, so the blocking permit is at a fixed position.
      `CASE WHEN t.ok OR ${x.cost} > ${limit} THEN 0 ELSE t.log[cardinality(t.log) + ${x.cost}::int - ${limit}::int] END`,
    ];
  },
};

class SlidingWindowLog extends LimitPerWindow<TimestampLog> {
  readonly kind = 'sliding-window-log';
  readonly redis = redis;
  readonly postgres = postgres;

  constructor(options: SlidingWindowLogOptions) {
    super(options, MAX_LOG_LIMIT);
  }

  create(): TimestampLog {
    return new TimestampLog(Math.min(this.limit, 8));
  }

  consume(log: TimestampLog, now: number, cost: number): RateLimitResult {
    const cutoff = now - this.windowMs;
    while (log.size > 0 && log.at(0) <= cutoff) log.dropOldest();
    const ok = log.size + cost <= this.limit;
    if (ok && cost > 0) log.append(now, cost, this.limit);
    const newest = log.size > 0 ? log.at(log.size - 1) : 0;
    const blocking = !ok && cost <= this.limit ? log.at(log.size + cost - this.limit - 1) : 0;
    return this.#result(ok, now, cost, log.size, newest, blocking);
  }

  idleAt(log: TimestampLog): number {
    return log.size > 0 ? log.at(log.size - 1) + this.windowMs : Number.NEGATIVE_INFINITY;
  }

  decode(values: readonly number[], cost: number): RateLimitResult {
    return this.#result(values[0] === 1, values[1]!, cost, values[2]!, values[3]!, values[4]!);
  }

  #result(
    ok: boolean,
    now: number,
    cost: number,
    size: number,
    newest: number,
    blocking: number,
  ): RateLimitResult {
    return {
      allowed: ok,
      limit: this.limit,
      remaining: this.limit - size,
      resetMs: size > 0 ? newest + this.windowMs - now : 0,
      retryAfterMs: ok ? 0 : cost > this.limit ? Number.POSITIVE_INFINITY : blocking + this.windowMs - now,
    };
  }
}
