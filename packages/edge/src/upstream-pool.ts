import type { Clock, EventEmitter, TimerHandle } from '@stratus/core';
import type { Pool } from 'undici';
import { type Balancer, HashRing, keyOf, LeastRequests, RoundRobin, type Weighted } from './balancers.js';
import type { HashKey, UpstreamConfig } from './config.js';
import type { Dispatchers } from './dispatchers.js';
import type { GatewayEvent } from './events.js';
import type { RequestView } from './request-view.js';

export const UPSTREAM_DEFAULTS = {
  connections: 128,
  connectTimeoutMs: 5_000,
  bodyTimeoutMs: 30_000,
  healthCheck: { intervalMs: 5_000, timeoutMs: 2_000, healthyThreshold: 2, unhealthyThreshold: 3 },
  ejection: { consecutiveFailures: 5, baseMs: 30_000, maxMs: 300_000, maxEjectedPercent: 50 },
} as const;

/** One member of a pool: an upstream server, its connections and its standing. */
export class Target implements Weighted {
  /** Requests in flight to it now (what least-requests balances on). */
  inflight = 0;
  /** Set by active health checks; a target starts healthy and is probed at once. */
  healthy = true;
  consecutiveFailures = 0;
  ejections = 0;
  /** Monotonic time until which it is ejected; 0 when it is not. */
  ejectedUntil = 0;

  constructor(
    readonly pool: UpstreamPool,
    /** The URL as configured, without a trailing slash: also its id on a hash ring. */
    readonly id: string,
    readonly origin: string,
    /** Its Host header: the URL's host name and port. */
    readonly host: string,
    /** A path the target's URL carries, prepended to every request's path ('' for none). */
    readonly basePath: string,
    readonly weight: number,
    readonly dispatcher: Pool,
  ) {}

  available(): boolean {
    if (!this.healthy) return false;
    if (this.ejectedUntil === 0) return true;
    if (this.pool.clock.monotonic() < this.ejectedUntil) return false;
    this.ejectedUntil = 0;
    this.pool.emit('target-restored', this);
    return true;
  }
}

/**
 * An upstream: its targets, how a request picks one, passive ejection of targets that keep failing (Envoy's
 * outlier detection: N consecutive failures eject a target for base × (ejections so far) up to a cap, never more
 * than a share of the pool, but always at least one) and active health checks.
 */
export class UpstreamPool {
  readonly targets: readonly Target[];
  readonly #balancer: Balancer<Target>;
  readonly #hashKey: HashKey | undefined;
  readonly #ejection: Required<NonNullable<UpstreamConfig['ejection']>>;
  readonly #timers = new Map<Target, TimerHandle>();
  readonly #checks: ReturnType<typeof healthCheckOf>;
  #closed = false;

  constructor(
    readonly name: string,
    readonly config: UpstreamConfig,
    readonly clock: Clock,
    readonly events: EventEmitter<GatewayEvent>,
    readonly dispatchers: Dispatchers,
  ) {
    const settings = {
      connections: config.connections ?? UPSTREAM_DEFAULTS.connections,
      connectTimeoutMs: config.connectTimeoutMs ?? UPSTREAM_DEFAULTS.connectTimeoutMs,
      bodyTimeoutMs: config.bodyTimeoutMs ?? UPSTREAM_DEFAULTS.bodyTimeoutMs,
    };
    this.targets = config.targets.map((target) => {
      const { url, weight = 1 } = typeof target === 'string' ? { url: target } : target;
      const parsed = new URL(url);
      const basePath = parsed.pathname === '/' ? '' : parsed.pathname.replace(/\/$/, '');
      const id = `${parsed.origin}${basePath}`;
      return new Target(
        this,
        id,
        parsed.origin,
        parsed.host,
        basePath,
        weight,
        dispatchers.acquire(parsed.origin, settings),
      );
    });
    const balance = config.balance ?? 'round-robin';
    this.#hashKey = typeof balance === 'object' ? balance.hash : undefined;
    this.#balancer =
      balance === 'least-requests'
        ? new LeastRequests(this.targets)
        : typeof balance === 'object'
          ? new HashRing(this.targets)
          : new RoundRobin(this.targets);
    this.#ejection = { ...UPSTREAM_DEFAULTS.ejection, ...config.ejection };
    this.#checks = healthCheckOf(config);
  }

  /** Starts the active health checks, if the upstream has them: every target is probed at once. */
  start(): void {
    if (this.#checks === undefined) return;
    for (const target of this.targets) this.#probe(target, 0, 0);
  }

  /** The target for a request (another than `skip` if one is available), or undefined when none is. */
  pick(request: RequestView, skip?: Target): Target | undefined {
    const key = this.#hashKey === undefined ? undefined : keyOf(this.#hashKey, request);
    return this.#balancer.pick(key, skip);
  }

  /** An answer came back from the target (any status the route does not count as a failure). */
  succeeded(target: Target): void {
    target.consecutiveFailures = 0;
  }

  /** The target failed a request: no connection, a reset, a timeout, or a status the route counts as failure. */
  failed(target: Target): void {
    target.consecutiveFailures += 1;
    const ejection = this.#ejection;
    if (target.consecutiveFailures < ejection.consecutiveFailures || target.ejectedUntil !== 0) return;
    const now = this.clock.monotonic();
    const ejected = this.targets.filter((t) => t.ejectedUntil > now).length;
    const allowed = Math.max(1, Math.floor((this.targets.length * ejection.maxEjectedPercent) / 100));
    if (ejection.maxEjectedPercent === 0 || ejected >= allowed) return;
    target.ejections += 1;
    const duration = Math.min(ejection.baseMs * target.ejections, ejection.maxMs);
    target.ejectedUntil = now + duration;
    target.consecutiveFailures = 0;
    this.emit('target-ejected', target, duration);
  }

  emit(
    type: 'target-ejected' | 'target-restored' | 'target-unhealthy' | 'target-healthy',
    target: Target,
    durationMs?: number,
  ): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'gateway',
      name: this.name,
      type,
      at: this.clock.now(),
      upstream: this.name,
      target: target.id,
      ...(durationMs === undefined ? {} : { durationMs }),
    });
  }

  /** Stops health checks and lets go of the connections (requests in flight finish). */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) this.clock.clearTimeout(timer);
    this.#timers.clear();
    for (const target of this.targets) this.dispatchers.release(target.dispatcher);
  }

  /** One probe after `delayMs` (at once for 0), then the next; `streak` counts successes (> 0) or failures (< 0). */
  #probe(target: Target, delayMs: number, streak: number): void {
    const checks = this.#checks;
    if (checks === undefined || this.#closed) return;
    const run = () => {
      this.#timers.delete(target);
      void probeOnce(target, checks.path, checks.timeoutMs).then((ok) => {
        if (this.#closed) return;
        const next = ok ? Math.max(streak, 0) + 1 : Math.min(streak, 0) - 1;
        if (ok && !target.healthy && next >= checks.healthyThreshold) {
          target.healthy = true;
          this.emit('target-healthy', target);
        } else if (!ok && target.healthy && -next >= checks.unhealthyThreshold) {
          target.healthy = false;
          this.emit('target-unhealthy', target);
        }
        this.#probe(target, checks.intervalMs, next);
      });
    };
    if (delayMs === 0) run();
    else this.#timers.set(target, this.clock.setTimeout(run, delayMs, { unref: true }));
  }
}

function healthCheckOf(config: UpstreamConfig) {
  return config.healthCheck === undefined
    ? undefined
    : { ...UPSTREAM_DEFAULTS.healthCheck, ...config.healthCheck };
}

/** GET the health path: a 2xx or 3xx answer within the timeout is a success. */
async function probeOnce(target: Target, path: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await target.dispatcher.request({
      origin: target.origin,
      path: target.basePath + path,
      method: 'GET',
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      headers: { 'user-agent': 'stratus-gateway-health-check' },
    });
    await response.body.dump();
    return response.statusCode >= 200 && response.statusCode < 400;
  } catch {
    return false;
  }
}
