/**
 * Health endpoints (Health Endpoint Monitoring) and Prometheus metrics: liveness says the process serves HTTP,
 * readiness that every background part of the system is running; /metrics has the process, the HTTP requests and
 * the system's own counters.
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
  app.get('/health/ready', async (_request, reply) => {
    const ready = system.ready();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'unavailable' });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}
