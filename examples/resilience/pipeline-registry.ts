// A pipeline registry: named pipelines built from options and rebuilt at run time from new configuration. Callers
// keep a stable handle; calls in flight finish on the pipeline they started on, and a configuration that fails to
// build changes nothing. `carry` keeps a component, such as a breaker and its state, across rebuilds.
// Prints:
//   payments v1: 3 attempts
//   payments v2: 5 attempts
//   the breaker was kept across the rebuild: true
//   refused: ERR_STRATUS_PIPELINE_RELOAD, payments still v2
//   from the watched source: payments v3: 2 attempts
import { EventEmitter } from 'node:events';
import { constantBackoff } from '@stratus/core';
import {
  type CircuitBreakerPolicy,
  circuitBreaker,
  PipelineRegistry,
  PipelineReloadError,
  pipeline,
  retry,
  timeout,
} from '@stratus/resilience';

interface PaymentsOptions {
  readonly maxAttempts: number;
  readonly timeoutMs: number;
}

const registry = new PipelineRegistry();
const breakers: CircuitBreakerPolicy[] = [];
const payments = registry.define(
  'payments',
  (options: PaymentsOptions, { carry }) => {
    const breaker = carry(
      'breaker',
      (previous: CircuitBreakerPolicy | undefined) => previous ?? circuitBreaker(),
    );
    breakers.push(breaker);
    return pipeline(
      retry({ maxAttempts: options.maxAttempts, backoff: constantBackoff(1) }),
      breaker,
      timeout(options.timeoutMs), // throws InvalidOptionsError on a bad value: the rebuild is refused
    );
  },
  { maxAttempts: 3, timeoutMs: 1_000 },
);
const show = (prefix = '') =>
  console.log(`${prefix}payments v${payments.version}: ${payments.options.maxAttempts} attempts`);

show();
payments.reconfigure({ maxAttempts: 5, timeoutMs: 1_000 });
show();
console.log(`the breaker was kept across the rebuild: ${breakers[0] === breakers[1]}`);

try {
  registry.reload({ payments: { maxAttempts: 5, timeoutMs: -1 } });
} catch (error) {
  if (error instanceof PipelineReloadError)
    console.log(`refused: ${error.code}, payments still v${payments.version}`);
}

// A configuration pushed by a watcher (a file watcher, a config service); `{ load, intervalMs }` polls instead.
const config = new EventEmitter();
const stop = registry.watch({ emitter: config });
config.emit('change', { payments: { maxAttempts: 2, timeoutMs: 1_000 } });
show('from the watched source: ');
stop();

await payments.execute(async () => 'charged'); // calls always run on the version in force
