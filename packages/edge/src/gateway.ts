import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Clock, EventEmitter, systemClock } from '@stratus/core';
import { MemoryRateLimitStore, type RateLimitStore } from '@stratus/resilience';
import { type Authenticator, authenticatorOf } from './auth.js';
import { type GatewayConfig, parseGatewayConfig } from './config.js';
import { Dispatchers } from './dispatchers.js';
import { GatewayConfigError } from './errors.js';
import type { GatewayEvent } from './events.js';
import { type Forwarding, forward, type Outcome, reply } from './forward.js';
import { requestIdOf } from './headers.js';
import { checkLimits, limiterOf, type RouteLimit } from './limits.js';
import { Lockout } from './lockout.js';
import { RequestView } from './request-view.js';
import { RetryBudget } from './retry-budget.js';
import { compileRoute, type Route } from './routes.js';
import { UpstreamPool } from './upstream-pool.js';

export interface GatewayOptions {
  readonly config: GatewayConfig | unknown;
  readonly clock?: Clock;
  /**
   * Where rate limits keep their counters: a RedisRateLimitStore or PostgresRateLimitStore shares them with every
   * gateway on the same store; default this process's memory.
   */
  readonly rateLimitStore?: RateLimitStore;
}

/** One config, compiled: what a request reads when it starts (a reload swaps the whole of it at once). */
interface Compiled {
  readonly version: number;
  readonly config: GatewayConfig;
  readonly routes: readonly Route[];
  readonly pools: ReadonlyMap<string, UpstreamPool>;
  readonly budget: RetryBudget;
}

const BUDGET_DEFAULTS = { ratio: 0.2, minPerSecond: 10 } as const;
const FAILED_AUTH_PER_MINUTE = 30;

/**
 * Gateway Routing: one endpoint in front of many upstreams. `handle(request, response)` is a plain Node request
 * handler (for `http.createServer`, `https`, `http2` in compatibility mode, or a framework's raw hooks).
 *
 * `reload(config)` swaps the route table and pools at once: a request already in flight finishes on the config it
 * started with; upstreams whose definition did not change keep their targets' standing (ejections, health) and
 * their connections. A config that fails validation throws GatewayConfigError and changes nothing.
 */
export class Gateway {
  readonly events = new EventEmitter<GatewayEvent>();
  readonly clock: Clock;
  readonly #dispatchers = new Dispatchers();
  readonly #rateLimitStore: RateLimitStore;
  /** Failed authentications per client address: 30 a minute, then refused unchecked. */
  readonly #failedAuth: Lockout;
  /** Authenticators by the JSON of their config: kept across reloads with their key sets and verified tokens. */
  #authenticators = new Map<string, Authenticator>();
  #compiled: Compiled;
  #closed = false;

  constructor(options: GatewayOptions) {
    this.clock = options.clock ?? systemClock;
    this.#rateLimitStore = options.rateLimitStore ?? new MemoryRateLimitStore();
    this.#failedAuth = new Lockout('gateway-failed-auth', FAILED_AUTH_PER_MINUTE, this.clock);
    const config = parseGatewayConfig(options.config);
    this.#compiled = this.#compile(config, 1, new Map());
    for (const pool of this.#compiled.pools.values()) pool.start();
    this.#announce('config-applied', 1);
  }

  /** The config now in force. */
  get config(): GatewayConfig {
    return this.#compiled.config;
  }

  /** True once close() was called: requests get 503. */
  get closed(): boolean {
    return this.#closed;
  }

  /** How many configs were applied so far (1 at start). */
  get version(): number {
    return this.#compiled.version;
  }

  /** The pools now in force, by name: their targets' standing, for an admin page or a test. */
  get upstreams(): ReadonlyMap<string, UpstreamPool> {
    return this.#compiled.pools;
  }

  /**
   * Applies a new config, or throws GatewayConfigError (and emits `config-rejected`) leaving the last good one in
   * force. `source` names where it came from, for the events.
   */
  reload(value: unknown, source?: string): void {
    if (this.#closed) throw new Error('the gateway is closed');
    const version = this.#compiled.version + 1;
    let config: GatewayConfig;
    try {
      config = parseGatewayConfig(value);
    } catch (error) {
      if (error instanceof GatewayConfigError)
        this.#announce('config-rejected', version, source, error.problems);
      throw error;
    }
    const previous = this.#compiled;
    const next = this.#compile(config, version, previous.pools);
    this.#compiled = next;
    for (const [name, pool] of previous.pools) if (next.pools.get(name) !== pool) pool.close();
    for (const [name, pool] of next.pools) if (previous.pools.get(name) !== pool) pool.start();
    this.#announce('config-applied', version, source);
  }

  /** Reports a config refused before it could reach `reload` (unreadable, not JSON): emits `config-rejected`. */
  refuse(error: GatewayConfigError, source?: string): void {
    this.#announce('config-rejected', this.#compiled.version + 1, source, error.problems);
  }

  /** Routes one request: proxies it, or answers 400, 404, 502, 503 or 504 itself. */
  handle = (request: IncomingMessage, response: ServerResponse): void => {
    const started = this.clock.monotonic();
    const requestId = requestIdOf(request) ?? randomUUID();
    const done = (outcome: Outcome) => this.#logged(request, requestId, started, outcome);
    if (this.#closed) {
      reply(response, 503, requestId, 'The gateway is shutting down.');
      done({ status: 503, attempts: 0, error: 'closed' });
      return;
    }
    const view = RequestView.of(request);
    if (view === undefined) {
      reply(response, 400, requestId, 'The request target is not a path the gateway routes.');
      done({ status: 400, attempts: 0, error: 'bad-path' });
      return;
    }
    const compiled = this.#compiled;
    for (const route of compiled.routes) {
      const params: Record<string, string> = {};
      if (route.match(view, params)) {
        const forwarding = {
          view,
          response,
          route,
          params,
          requestId,
          budget: compiled.budget,
          clock: this.clock,
          done,
        };
        if (route.limits.length === 0 && route.auth === undefined) forward(forwarding);
        else void this.#guarded(forwarding);
        return;
      }
    }
    reply(response, 404, requestId, 'No route matches the request.');
    done({ status: 404, attempts: 0, error: 'no-route' });
  };

  /**
   * Forwards a request once its route's authenticator and rate limits let it through; else answers 401, 429 (or
   * 503) itself. A client whose credentials keep failing is refused unchecked for a while (429).
   */
  async #guarded(forwarding: Forwarding): Promise<void> {
    const { response, requestId, done, route, view } = forwarding;
    const auth = route.auth;
    if (auth !== undefined) {
      const client = view.ip;
      if (this.#failedAuth.locked(client)) {
        reply(response, 429, requestId, 'Too many failed authentications; try again later.', {
          'retry-after': '60',
        });
        done({ status: 429, attempts: 0, route: route.name, error: 'auth-locked-out' });
        return;
      }
      const checked = await auth.authenticate(view);
      if (!checked.ok) {
        this.#failedAuth.failed(client);
        reply(response, 401, requestId, checked.detail, { 'www-authenticate': checked.challenge });
        done({ status: 401, attempts: 0, route: route.name, error: 'unauthenticated' });
        return;
      }
      forwarding = { ...forwarding, verified: { owned: auth.owns, headers: checked.headers } };
    }
    if (route.limits.length === 0) {
      forward(forwarding);
      return;
    }
    const verdict = await checkLimits(route.limits, view);
    const failed = verdict.allowed ? verdict.storeFailed : verdict.status === 503 ? verdict.limit : undefined;
    if (failed !== undefined && this.events.active) {
      this.events.emit({
        component: 'gateway',
        name: 'gateway',
        type: 'rate-limit-store-failed',
        at: this.clock.now(),
        limit: failed,
        allowed: verdict.allowed,
      });
    }
    if (verdict.allowed) {
      forward({ ...forwarding, extraHeaders: verdict.headers });
    } else if (verdict.status === 429) {
      reply(response, 429, requestId, `Rate limit "${verdict.limit}" reached.`, verdict.headers);
      done({ status: 429, attempts: 0, route: forwarding.route.name, error: 'rate-limited' });
    } else {
      reply(response, 503, requestId, `Rate limit "${verdict.limit}" cannot be checked now.`);
      done({ status: 503, attempts: 0, route: forwarding.route.name, error: 'rate-limit-unavailable' });
    }
  }

  /** Stops health checks and closes the upstream connections once the requests in flight are done. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const pool of this.#compiled.pools.values()) pool.close();
    await this.#dispatchers.close();
  }

  #compile(config: GatewayConfig, version: number, previous: ReadonlyMap<string, UpstreamPool>): Compiled {
    const pools = new Map<string, UpstreamPool>();
    for (const [name, upstream] of Object.entries(config.upstreams)) {
      const kept = previous.get(name);
      pools.set(
        name,
        kept !== undefined && sameJson(kept.config, upstream)
          ? kept
          : new UpstreamPool(name, upstream, this.clock, this.events, this.#dispatchers),
      );
    }
    const budget = config.retryBudget ?? BUDGET_DEFAULTS;
    const limits = new Map<string, RouteLimit>(
      Object.entries(config.rateLimits ?? {}).map(([name, limit]) => [
        name,
        { name, config: limit, limiter: limiterOf(name, limit, this.#rateLimitStore, this.clock) },
      ]),
    );
    const authenticators = new Map<string, Authenticator>();
    const kept = new Map<string, Authenticator>();
    for (const [name, auth] of Object.entries(config.auth ?? {})) {
      const key = JSON.stringify(auth);
      const authenticator = this.#authenticators.get(key) ?? authenticatorOf(auth, this.clock);
      authenticators.set(name, authenticator);
      kept.set(key, authenticator);
    }
    this.#authenticators = kept;
    return {
      version,
      config,
      routes: config.routes.map((route, index) => compileRoute(route, index, pools, limits, authenticators)),
      pools,
      budget: new RetryBudget(budget.ratio, budget.minPerSecond ?? BUDGET_DEFAULTS.minPerSecond, this.clock),
    };
  }

  #announce(
    type: 'config-applied' | 'config-rejected',
    version: number,
    source?: string,
    problems?: readonly string[],
  ) {
    if (!this.events.active) return;
    this.events.emit({
      component: 'gateway',
      name: 'gateway',
      type,
      at: this.clock.now(),
      version,
      ...(source === undefined ? {} : { source }),
      ...(problems === undefined ? {} : { problems }),
    });
  }

  #logged(request: IncomingMessage, requestId: string, started: number, outcome: Outcome): void {
    if (!this.events.active) return;
    const url = request.url ?? '';
    const queryAt = url.indexOf('?');
    this.events.emit({
      component: 'gateway',
      name: 'gateway',
      type: 'request',
      at: this.clock.now(),
      requestId,
      method: request.method ?? '',
      // The path only: query strings carry tokens and personal data that logs must not keep.
      path: queryAt === -1 ? url : url.slice(0, queryAt),
      durationMs: this.clock.monotonic() - started,
      ...outcome,
    });
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
