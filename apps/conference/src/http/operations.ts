/**
 * Health endpoints (Health Endpoint Monitoring) and Prometheus metrics: liveness says the process serves HTTP,
 * readiness that every background part of the system is running, and whether it is degraded: no worker alive (orders
 * wait in the queues), or events parked or a handler failing (an operator must look); /metrics has the process, the
 * HTTP requests and the system's own counters, for whom metricsAccess lets see them.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { ConferenceConfig } from '../app/config.js';
import type { ConferenceSystem } from '../app/system.js';

/**
 * Who may read /metrics: the holders of a bearer token, clients on this host only, or nobody (the route does not
 * exist then).
 */
export type MetricsAccess = { readonly token: string } | 'loopback' | 'off';

/**
 * With METRICS_TOKEN, its holders. Without it the embedded default shows its metrics to its own host, as before;
 * scaled out (several processes behind a load balancer) nobody, rather than everybody.
 */
export function metricsAccess(config: ConferenceConfig): MetricsAccess {
  if (config.metricsToken !== undefined) return { token: config.metricsToken };
  return config.role === 'all' && config.databaseUrl === undefined ? 'loopback' : 'off';
}

export interface OperationsOptions {
  readonly system: ConferenceSystem;
  readonly metrics: MetricsAccess;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Whether the request carries `token` as its bearer token, compared in constant time. */
function bearer(request: FastifyRequest, token: string): boolean {
  const given = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '')?.[1];
  return given !== undefined && timingSafeEqual(digest(given), digest(token));
}

export async function operationsRoutes(app: FastifyInstance, options: OperationsOptions): Promise<void> {
  const { system, metrics } = options;
  app.get('/health/live', async () => ({ status: 'ok' }));
  // Ready while every part runs. Degraded, still 200 (the queues keep the orders, the other orders go on), while no
  // worker is alive, or events are parked or a handler keeps failing.
  app.get('/health/ready', async (_request, reply) => {
    const workers = system.ready() ? await system.liveWorkers().catch(() => undefined) : undefined;
    if (workers === undefined) return reply.code(503).send({ status: 'unavailable' });
    const parked = Object.values(await system.parkedEvents()).reduce((sum, count) => sum + count, 0);
    const failing = (await system.backgroundStats()).failingHandlers.map(({ handler }) => handler);
    const degraded = workers === 0 || parked > 0 || failing.length > 0;
    return reply.send({
      status: degraded ? 'degraded' : 'ok',
      workers,
      parkedEvents: parked,
      failingHandlers: failing,
    });
  });
  if (metrics === 'off') return;

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP requests by method, route and status code',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  system.registerMetrics(registry);
  app.addHook('onResponse', async (request, reply) => {
    requests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/metrics', async (request, reply) => {
    if (metrics === 'loopback' && !LOOPBACK.has(request.socket.remoteAddress ?? ''))
      return reply.code(404).send({ error: 'Not found.' });
    if (metrics !== 'loopback' && !bearer(request, metrics.token))
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer')
        .send({ error: 'A metrics token is required.' });
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}
