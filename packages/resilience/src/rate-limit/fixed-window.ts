import { LimitPerWindow, type PostgresProgram, type RedisProgram, type SqlTerms } from './algorithm.js';
import { createLimiter, type StoreOption } from './limiter.js';
import type { MemoryRateLimitStore } from './memory-store.js';
import type { LimiterOptions, LocalRateLimiter, RateLimiter, RateLimitResult } from './types.js';

export interface FixedWindowOptions extends LimiterOptions, StoreOption {
  /** Permits per window (integer >= 1). */
  limit: number;
  /** Window length; windows are aligned to multiples of it (epoch-aligned in shared stores). */
  windowMs: number;
}

/**
 * Fixed window: at most `limit` permits per key in each window [k·windowMs, (k+1)·windowMs). Cheapest of all,
 * but a client can spend a whole quota at the end of one window and another at the start of the next: up
 * to 2 × limit within a moment. Use a sliding window, a token bucket or GCRA where that matters.
 */
export function fixedWindow(options: FixedWindowOptions & { store?: MemoryRateLimitStore }): LocalRateLimiter;
export function fixedWindow(options: FixedWindowOptions): RateLimiter;
export function fixedWindow(options: FixedWindowOptions): RateLimiter {
  return createLimiter(new FixedWindow(options), options);
}

interface WindowState {
  /** Start of the window the count belongs to. */
  start: number;
  used: number;
}

const lua = `
local current = math.floor(now / window) * window
local start, used = current, 0
local state = redis.call('GET', key)
if state then start, used = struct.unpack('<dd', state) end
-- A window older than the current one is over; a newer one (a clock behind) is kept, never reset.
if start < current then
  start = current
  used = 0
end
local ok = 0
if used + cost <= limit then
  ok = 1
  used = used + cost
  -- Expiry only collects idle keys (the state carries its own times), so a margin is harmless and keeps
  -- state alive when an injected clock runs apart from the server's.
  redis.call('SET', key, struct.pack('<dd', start, used), 'PX', math.max(1, math.ceil(start + window - now)) + 1000)
end
return struct.pack('<dddd', ok, now, start, used)
`;

const redis: RedisProgram = { name: 'fixed-window', params: ['limit', 'window'], lua };

const postgres: PostgresProgram = {
  table: 'fixed_window',
  columns: [
    ['start', 'float8'],
    ['used', 'float8'],
  ],
  transition: (x: SqlTerms) => {
    const [limit, window] = [x.param(0), x.param(1)];
    return `
    , LATERAL (SELECT floor(${x.now} / ${window}) * ${window} AS cur) c
    , LATERAL (SELECT prev.start IS NULL OR prev.start < c.cur AS expired) e
    , LATERAL (SELECT CASE WHEN e.expired THEN c.cur ELSE prev.start END AS start,
                      CASE WHEN e.expired THEN 0 ELSE prev.used END AS used) w
    , LATERAL (SELECT w.start,
                      CASE WHEN w.used + ${x.cost} <= ${limit} THEN w.used + ${x.cost} ELSE w.used END AS used,
                      w.used + ${x.cost} <= ${limit} AS ok,
                      w.start + ${window} AS expires_at) s`;
  },
  returning: () => ['t.start', 't.used'],
};

class FixedWindow extends LimitPerWindow<WindowState> {
  readonly kind = 'fixed-window';
  readonly redis = redis;
  readonly postgres = postgres;

  constructor(options: FixedWindowOptions) {
    super(options);
  }

  create(now: number): WindowState {
    return { start: this.#windowOf(now), used: 0 };
  }

  consume(state: WindowState, now: number, cost: number): RateLimitResult {
    const current = this.#windowOf(now);
    if (state.start < current) {
      state.start = current;
      state.used = 0;
    }
    const ok = state.used + cost <= this.limit;
    if (ok) state.used += cost;
    return this.#result(ok, now, cost, state.start, state.used);
  }

  idleAt(state: WindowState): number {
    return state.start + this.windowMs;
  }

  decode(values: readonly number[], cost: number): RateLimitResult {
    return this.#result(values[0] === 1, values[1]!, cost, values[2]!, values[3]!);
  }

  #windowOf(now: number): number {
    return Math.floor(now / this.windowMs) * this.windowMs;
  }

  #result(ok: boolean, now: number, cost: number, start: number, used: number): RateLimitResult {
    const end = start + this.windowMs - now;
    return {
      allowed: ok,
      limit: this.limit,
      remaining: Math.max(0, this.limit - used),
      resetMs: used > 0 ? end : 0,
      retryAfterMs: ok ? 0 : cost > this.limit ? Number.POSITIVE_INFINITY : end,
    };
  }
}
