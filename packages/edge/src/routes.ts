import type { Authenticator } from './auth.js';
import { hash32, keyOf, RoundRobin } from './balancers.js';
import type { RouteConfig } from './config.js';
import type { RouteLimit } from './limits.js';
import { compileMatch, type Matcher, pathSegments } from './matchers.js';
import type { RequestView } from './request-view.js';
import type { UpstreamPool } from './upstream-pool.js';

export const ROUTE_DEFAULTS = { timeoutMs: 30_000, retryOn: [502, 503, 504] } as const;

/** A route ready to serve: its matcher, where its requests go and how their path is rewritten. */
export interface Route {
  readonly name: string;
  readonly match: Matcher;
  /** The pool for a request: the route's one upstream, or its split's pick. */
  destination(request: RequestView): UpstreamPool;
  /** The upstream path (with the query) for a request that matched with these parameters. */
  pathFor(request: RequestView, params: Record<string, string>): string;
  readonly preserveHost: boolean;
  readonly timeoutMs: number;
  readonly attempts: number;
  readonly retryOn: ReadonlySet<number>;
  /** The rate limits every request counts against, in order. */
  readonly limits: readonly RouteLimit[];
  /** What every request must pass first, if anything. */
  readonly auth: Authenticator | undefined;
}

export function compileRoute(
  config: RouteConfig,
  index: number,
  pools: ReadonlyMap<string, UpstreamPool>,
  limits: ReadonlyMap<string, RouteLimit>,
  authenticators: ReadonlyMap<string, Authenticator>,
): Route {
  const poolOf = (name: string) => pools.get(name) as UpstreamPool;
  return {
    name: config.name ?? `route-${index}`,
    match: compileMatch(config.match),
    destination: destinationOf(config, poolOf),
    pathFor: rewriterOf(config),
    preserveHost: config.preserveHost ?? false,
    timeoutMs: config.timeoutMs ?? ROUTE_DEFAULTS.timeoutMs,
    attempts: config.retry?.attempts ?? 1,
    retryOn: new Set(config.retry?.on ?? ROUTE_DEFAULTS.retryOn),
    limits: [config.rateLimit ?? []].flat().map((name) => limits.get(name) as RouteLimit),
    auth: config.auth === undefined ? undefined : authenticators.get(config.auth),
  };
}

function destinationOf(config: RouteConfig, poolOf: (name: string) => UpstreamPool): Route['destination'] {
  if (config.split === undefined) {
    const pool = poolOf(config.upstream as string);
    return () => pool;
  }
  const arms = config.split
    .filter((arm) => arm.weight > 0)
    .map((arm) => ({ pool: poolOf(arm.upstream), weight: arm.weight, inflight: 0, available: () => true }));
  const sticky = config.sticky;
  if (sticky !== undefined) {
    // A client with a key stays on one arm while the weights stay as they are.
    const total = arms.reduce((sum, arm) => sum + arm.weight, 0);
    const spread = new RoundRobin(arms);
    return (request) => {
      const key = keyOf(sticky, request);
      if (key === undefined) return (spread.pick() as (typeof arms)[number]).pool;
      let point = hash32(key) % total;
      for (const arm of arms) {
        if (point < arm.weight) return arm.pool;
        point -= arm.weight;
      }
      return (arms[0] as (typeof arms)[number]).pool;
    };
  }
  // Exact shares over every cycle of the total weight, not just on average.
  const spread = new RoundRobin(arms);
  return () => (spread.pick() as (typeof arms)[number]).pool;
}

function rewriterOf(config: RouteConfig): Route['pathFor'] {
  const rewrite = config.rewrite;
  const match = config.match;
  if (rewrite?.prefix !== undefined && match?.prefix !== undefined) {
    const from = match.prefix.endsWith('/') ? match.prefix.slice(0, -1) : match.prefix;
    const to = rewrite.prefix.endsWith('/') ? rewrite.prefix.slice(0, -1) : rewrite.prefix;
    return (request) => {
      const rest = request.path.slice(from.length);
      return (to + rest || '/') + request.search;
    };
  }
  if (rewrite?.path !== undefined) {
    const segments = pathSegments(rewrite.path);
    return (request, params) =>
      `/${segments
        .map((segment) =>
          'literal' in segment
            ? segment.literal
            : (params['param' in segment ? segment.param : segment.rest] ?? ''),
        )
        .join('/')}${request.search}`;
  }
  return (request) => request.path + request.search;
}
