import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Gateway } from './gateway.js';

/** Seconds: from a cached answer on loopback to a slow upstream near the default 30 s timeout. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface GatewayMetrics {
  readonly registry: Registry;
  /** Stops counting (the registry keeps what was counted). */
  stop(): void;
}

/**
 * Prometheus metrics of a gateway, fed by its events: requests by route, upstream and status, their durations,
 * retries, what the gateway answered itself and why, target ejections and health, targets available now, config
 * versions and refusals, and rate-limit store failures. Labels come from the config (route, upstream and target
 * names), never from requests, so a client cannot grow the series.
 */
export function collectGatewayMetrics(gateway: Gateway, registry: Registry = new Registry()): GatewayMetrics {
  const requests = new Counter({
    name: 'stratus_gateway_requests_total',
    help: 'Requests answered, by route, upstream and status code',
    labelNames: ['route', 'upstream', 'code'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'stratus_gateway_request_duration_seconds',
    help: 'Time from the request to the end of the answer, by route',
    labelNames: ['route'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'stratus_gateway_retries_total',
    help: 'Attempts beyond the first, by route and upstream',
    labelNames: ['route', 'upstream'] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'stratus_gateway_own_answers_total',
    help: 'Answers of the gateway itself, by reason (no-route, no-target, upstream-error, rate-limited, ...)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const targetEvents = new Counter({
    name: 'stratus_gateway_target_events_total',
    help: 'Targets ejected, restored, marked unhealthy or healthy, by upstream and target',
    labelNames: ['upstream', 'target', 'event'] as const,
    registers: [registry],
  });
  const limitStoreFailures = new Counter({
    name: 'stratus_gateway_rate_limit_store_failures_total',
    help: 'Rate limit checks the shared store did not answer, by limit and whether the request went on',
    labelNames: ['limit', 'allowed'] as const,
    registers: [registry],
  });
  const configs = new Counter({
    name: 'stratus_gateway_configs_total',
    help: 'Configs applied or refused since start',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'stratus_gateway_config_version',
    help: 'Configs applied so far (1 at start)',
    registers: [registry],
    collect() {
      this.set(gateway.version);
    },
  });
  new Gauge({
    name: 'stratus_gateway_target_available',
    help: '1 when a target takes requests (healthy and not ejected), else 0',
    labelNames: ['upstream', 'target'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [name, pool] of gateway.upstreams)
        for (const target of pool.targets)
          this.set({ upstream: name, target: target.id }, target.available() ? 1 : 0);
    },
  });
  const stop = gateway.events.on((event) => {
    switch (event.type) {
      case 'request': {
        const route = event.route ?? '';
        requests.inc({ route, upstream: event.upstream ?? '', code: String(event.status) });
        duration.observe({ route }, event.durationMs / 1000);
        if (event.attempts > 1) retries.inc({ route, upstream: event.upstream ?? '' }, event.attempts - 1);
        if (event.error !== undefined) refusals.inc({ reason: event.error });
        return;
      }
      case 'config-applied':
      case 'config-rejected':
        configs.inc({ outcome: event.type === 'config-applied' ? 'applied' : 'refused' });
        return;
      case 'rate-limit-store-failed':
        limitStoreFailures.inc({ limit: event.limit, allowed: String(event.allowed) });
        return;
      default:
        targetEvents.inc({
          upstream: event.upstream,
          target: event.target,
          event: event.type.slice('target-'.length),
        });
    }
  });
  return { registry, stop };
}
