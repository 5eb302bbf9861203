import {
  EPSILON,
  LimitPerWindow,
  type PostgresProgram,
  type RedisProgram,
  wholePermits,
} from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface SlidingWindowCounterOptions extends LimiterOptions, StoreOption {
  /** Permits per sliding window (integer >= 1). */
  limit: number;
  windowMs: number;
}

/**
 * Sliding window, weighted two-window counter (as Cloudflare and nginx-style limiters do it): two counts per
 * key, the current fixed window's and the previous one's, and the count of the sliding window ending now is
 * estimated as previous × (share of the previous window still inside it) + current.
 *
 * Accuracy: exact when the previous window's requests were spread evenly; O(1) state whatever the limit.
 * It removes the fixed window's edge burst (right after an edge the previous window still counts in full),
 * but it is an estimate: if the previous window's requests all came at its very end, a sliding window can
 * hold up to limit × (1 + f) where f is how far into the current window we are. Use slidingWindowLog where
 * "never more than `limit` in any window" must hold exactly.
 */
export function slidingWindowCounter(
  options: SlidingWindowCounterOptions & { store?: MemoryRateLimitStore },
): LocalRateLimiter;
export function slidingWindowCounter(options: SlidingWindowCounterOptions): RateLimiter;
export function slidingWindowCounter(options: SlidingWindowCounterOptions): RateLimiter {
  return createLimiter(new SlidingWindowCounter(options), options);
}

interface CounterState {
  /** Start of the current fixed window. */
  start: number;
  previous: number;
  current: number;
}

const lua = `
local now_start = math.floor(now / window) * window
local start, previous, current = now_start, 0, 0
local state = redis.call('GET', key)
if state then start, previous, current = struct.unpack('<ddd', state) end
if start < now_start then
  -- Roll over: the current window becomes the previous one, unless a whole window passed in between.
  if start == now_start - window then previous = current else previous = 0 end
  current = 0
  start = now_start
end
local elapsed = math.max(0, now - start)
local estimate = previous * (window - elapsed) / window + current
local ok = 0
if estimate + cost <= limit + ${EPSILON} then
  ok = 1
  current = current + cost
  local idle_in = start + 2 * window - now
  -- Expiry only collects idle keys (the state carries its own times), so a margin is harmless and keeps
  -- state alive when an injected clock runs apart from the server's.
  redis.call('SET', key, struct.pack('<ddd', start, previous, current), 'PX', math.max(1, math.ceil(idle_in)) + 1000)
end
return struct.pack('<ddddd', ok, now, start, previous, current)
`;

const redis: RedisProgram = { name: 'sliding-window-counter', params: ['limit', 'window'], lua };

const postgres: PostgresProgram = {
  table: 'sliding_window_counter',
  columns: [
    ['start', 'float8'],
    ['previous', 'float8'],
    ['current', 'float8'],
  ],
  transition: (x) => {
    const [limit, window] = [x.param(0), x.param(1)];
    return `
    , LATERAL (SELECT floor(${x.now} / ${window}) * ${window} AS now_start) c
    , LATERAL (SELECT CASE WHEN prev.start IS NULL OR prev.start < c.now_start THEN c.now_start ELSE prev.start END AS start,
                      CASE WHEN prev.start IS NULL THEN 0
                           WHEN prev.start = c.now_start - ${window} THEN prev.current
                           WHEN prev.start < c.now_start THEN 0
                           ELSE prev.previous END AS previous,
                      CASE WHEN prev.start IS NULL OR prev.start < c.now_start THEN 0 ELSE prev.current END AS current) w
    , LATERAL (SELECT w.previous * (${window} - greatest(0, ${x.now} - w.start)) / ${window} + w.current
                      + ${x.cost} <= ${limit} + ${EPSILON} AS ok) o
    , LATERAL (SELECT w.start, w.previous,
                      CASE WHEN o.ok THEN w.current + ${x.cost} ELSE w.current END AS current,
                      o.ok, w.start + 2 * ${window} AS expires_at) s`;
  },
  returning: () => ['t.start', 't.previous', 't.current'],
};

class SlidingWindowCounter extends LimitPerWindow<CounterState> {
  readonly kind = 'sliding-window-counter';
  readonly redis = redis;
  readonly postgres = postgres;

  constructor(options: SlidingWindowCounterOptions) {
    super(options);
  }

  create(now: number): CounterState {
    return { start: this.#windowOf(now), previous: 0, current: 0 };
  }

  consume(state: CounterState, now: number, cost: number): RateLimitResult {
    const start = this.#windowOf(now);
    if (state.start < start) {
      state.previous = state.start === start - this.windowMs ? state.current : 0;
      state.current = 0;
      state.start = start;
    }
    const ok = this.#estimate(now, state.start, state.previous, state.current) + cost <= this.limit + EPSILON;
    if (ok) state.current += cost;
    return this.#result(ok, now, cost, state.start, state.previous, state.current);
  }

  idleAt(state: CounterState): number {
    return state.start + (state.current > 0 ? 2 : 1) * this.windowMs;
  }

  decode(values: readonly number[], cost: number): RateLimitResult {
    return this.#result(values[0] === 1, values[1]!, cost, values[2]!, values[3]!, values[4]!);
  }

  #windowOf(now: number): number {
    return Math.floor(now / this.windowMs) * this.windowMs;
  }

  /** Permits counted in the sliding window ending at `now`. */
  #estimate(now: number, start: number, previous: number, current: number): number {
    const elapsed = Math.min(this.windowMs, Math.max(0, now - start));
    return (previous * (this.windowMs - elapsed)) / this.windowMs + current;
  }

  #result(
    ok: boolean,
    now: number,
    cost: number,
    start: number,
    previous: number,
    current: number,
  ): RateLimitResult {
    const W = this.windowMs;
    let retryAfterMs = 0;
    if (!ok) {
      if (cost > this.limit) retryAfterMs = Number.POSITIVE_INFINITY;
      else if (current + cost <= this.limit) {
        // Fits in this window once enough of the previous window has slid out.
        retryAfterMs = start + W - ((this.limit - current - cost) * W) / previous - now;
      } else {
        // Needs the next window, where this window's count becomes the previous one and slides out.
        retryAfterMs = start + W + Math.max(0, W - ((this.limit - cost) * W) / current) - now;
      }
    }
    return {
      allowed: ok,
      limit: this.limit,
      remaining: wholePermits(this.limit - this.#estimate(now, start, previous, current)),
      resetMs: current > 0 ? start + 2 * W - now : previous > 0 ? start + W - now : 0,
      retryAfterMs: Math.max(0, retryAfterMs),
    };
  }
}
