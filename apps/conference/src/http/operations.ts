/**
 * Health endpoints (Health Endpoint Monitoring) and Prometheus metrics: liveness says the process serves HTTP,
 * readiness that every background part of the system is running (and whether events wait for an operator);
 * /metrics has the process, the HTTP requests and the system's own counters.
 */
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import type { ConferenceSystem } from '../app/system.js';

export interface OperationsOptions {
  readonly system: ConferenceSystem;
}

export async function operationsRoutes(app: FastifyInstance, { system }: OperationsOptions): Promise<void> {
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

  app.get('/health/live', async () => ({ status: 'ok' }));
  // Ready while every part runs; degraded (still 200: the other orders go on) while events are parked or a handler
  // keeps failing, which an operator must look at.
  app.get('/health/ready', async (_request, reply) => {
    if (!system.ready()) return reply.code(503).send({ status: 'unavailable' });
    const parked = Object.values(await system.parkedEvents()).reduce((sum, count) => sum + count, 0);
    const failing = (await system.backgroundStats()).failingHandlers.map(({ handler }) => handler);
    const degraded = parked > 0 || failing.length > 0;
    return reply
      .code(200)
      .send({ status: degraded ? 'degraded' : 'ok', parkedEvents: parked, failingHandlers: failing });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
