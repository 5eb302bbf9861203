import type { Clock } from '@stratus/core';
import {
  combineRateLimitHeaders,
  fixedWindow,
  gcra,
  type RateLimiter,
  type RateLimitResult,
  type RateLimitStore,
  rateLimitHeaders,
  slidingWindowCounter,
} from '@stratus/resilience';
import { keyOf } from './balancers.js';
import type { RateLimitConfig } from './config.js';
import type { RequestView } from './request-view.js';

/** A rate limit as a route applies it. */
export interface RouteLimit {
  readonly name: string;
  readonly limiter: RateLimiter;
  readonly config: RateLimitConfig;
}

/**
 * The limiter of a named limit. Limiters are named `gateway.<name>`: in a shared store (Redis, PostgreSQL), every
 * gateway instance with the same limit shares its counters, which is how a fleet enforces one limit.
 */
export function limiterOf(
  name: string,
  config: RateLimitConfig,
  store: RateLimitStore,
  clock: Clock,
): RateLimiter {
  const common = { name: `gateway.${name}`, store, clock };
  switch (config.algorithm ?? 'gcra') {
    case 'sliding-window':
      return slidingWindowCounter({ ...common, limit: config.limit, windowMs: config.windowMs });
    case 'fixed-window':
      return fixedWindow({ ...common, limit: config.limit, windowMs: config.windowMs });
    default:
      return gcra({
        ...common,
        limit: config.limit,
        periodMs: config.windowMs,
        burst: config.burst ?? config.limit,
      });
  }
}

/** What the limits of a route said about one request. */
export type LimitVerdict =
  | { readonly allowed: true; readonly headers: Record<string, string>; readonly storeFailed?: string }
  | {
      readonly allowed: false;
      readonly status: 429 | 503;
      readonly headers: Record<string, string>;
      readonly limit: string;
    };

/** A request without the key a limit counts by (no such header, say) counts under this one. */
const NO_KEY = '(none)';

/**
 * Takes one permit from each limit of a route, in order, for the request's key (its client address by default). The
 * first refusal answers 429 with Retry-After and RateLimit fields; a store that cannot answer lets the request
 * through or answers 503, as the limit's `onStoreFailure` says (default: let it through).
 */
export async function checkLimits(
  limits: readonly RouteLimit[],
  request: RequestView,
): Promise<LimitVerdict> {
  let headers: Record<string, string> = {};
  let storeFailed: string | undefined;
  for (const { name, limiter, config } of limits) {
    let result: RateLimitResult;
    try {
      result = await limiter.acquire(keyOf(config.key ?? 'ip', request) ?? NO_KEY);
    } catch {
      if (config.onStoreFailure === 'refuse')
        return { allowed: false, status: 503, headers: {}, limit: name };
      storeFailed = name;
      continue;
    }
    headers = combineRateLimitHeaders(
      headers,
      rateLimitHeaders(result, { policy: name, windowMs: config.windowMs }),
    );
    if (!result.allowed) return { allowed: false, status: 429, headers, limit: name };
  }
  return storeFailed === undefined ? { allowed: true, headers } : { allowed: true, headers, storeFailed };
}
