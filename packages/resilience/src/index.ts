export * from './bulkhead.js';
export * from './chaos.js';
export {
  type QuorumOptions,
  SharedCircuitFailure,
  type SharedCircuitOptions,
} from './circuit-breaker/circuit-sync.js';
export * from './circuit-breaker/consecutive-failures.js';
export * from './circuit-breaker/failure-count.js';
export * from './circuit-breaker/failure-ratio.js';
export * from './circuit-breaker/memory-state-store.js';
export * from './circuit-breaker/postgres-state-store.js';
export * from './circuit-breaker/redis-state-store.js';
export * from './circuit-breaker/rolling-window.js';
export * from './circuit-breaker/slow-call-ratio.js';
export * from './circuit-breaker/state-store.js';
export * from './circuit-breaker/trip-rule.js';
export * from './circuit-breaker.js';
export * from './errors.js';
export * from './failure.js';
export * from './fallback.js';
export * from './forwarded-context.js';
export * from './hedging.js';
export * from './latency-window.js';
export * from './pipeline.js';
export * from './policy.js';
export * from './rate-limit/index.js';
export * from './registry.js';
export * from './retry.js';
export * from './telemetry/event-fields.js';
export type {
  OpenTelemetryOptions,
  StratusInstrumentation,
  TracedOptions,
  TracedPolicy,
} from './telemetry/opentelemetry.js';
export * from './telemetry/pino.js';
export * from './timeout.js';
export * from './transient.js';
