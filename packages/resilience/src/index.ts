export * from './bulkhead.js';
export * from './chaos.js';
export * from './circuit-breaker/index.js';
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
