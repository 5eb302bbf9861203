/** The cases of the messaging suite (anchors §13 Q1–Q5), with their counts for a full and a quick run. */
import type { BackendKind, Driver, DriverSpec, QueueUnderTest } from './driver.js';
import { addBulk, addConcurrent, addOne, idleLatency, type Measurement, process } from './measure.js';
import { redelivery } from './redelivery.js';

export type CaseKind = 'throughput' | 'latency' | 'redelivery';

export interface Scale {
  /** Jobs per throughput measurement (fewer for an implementation too slow to do them within `targetMs`). */
  readonly jobs: number;
  readonly latencySamples: number;
  /** Lock duration (visibility timeout) of the redelivery case. */
  readonly lockMs: number;
  readonly rounds: number;
  /** Rounds of the redelivery case, whose every sample waits out a lock and starts a process. */
  readonly redeliveryRounds: number;
  /** A throughput measurement is sized to take about this long at the warm-up's rate, at most `jobs`. */
  readonly targetMs: number;
  /** No measurement runs longer than this (its rate is then jobs done ÷ time). */
  readonly capMs: number;
  /** A latency round ends after this long even with fewer samples (a poller with a 1 s interval gets few). */
  readonly latencyCapMs: number;
  /** Jobs (or samples) of the warm-up run of each case and implementation, and its cap. */
  readonly warmupJobs: number;
  readonly warmupCapMs: number;
}

export const fullScale: Scale = {
  jobs: 20_000,
  latencySamples: 200,
  lockMs: 5000,
  rounds: 3,
  redeliveryRounds: 1,
  targetMs: 3000,
  capMs: 10_000,
  latencyCapMs: 5000,
  warmupJobs: 2000,
  warmupCapMs: 2000,
};

export const quickScale: Scale = {
  jobs: 1000,
  latencySamples: 20,
  lockMs: 1000,
  rounds: 1,
  redeliveryRounds: 1,
  targetMs: 1000,
  capMs: 3000,
  latencyCapMs: 2000,
  warmupJobs: 100,
  warmupCapMs: 1000,
};

export const BULK_BATCH = 1000;
export const HIGH_CONCURRENCY = 50;
export const PRODUCERS = 50;
/** Prefetch of the Stratus-only `process-c1-prefetch` case. */
export const C1_PREFETCH = 10;
/** Pause between latency samples, so the worker is back in its idle wait when the next job comes. */
export const LATENCY_GAP_MS = 10;

/** What a measurement gets: the implementation (`D`, a queue driver here) and how to reach its data (`S`). */
export interface MeasureContext<D = Driver, S = DriverSpec> {
  readonly driver: D;
  readonly spec: S;
  /** A queue name not used before in the run. */
  readonly name: string;
  readonly scale: Scale;
}

export interface CaseDefinition {
  readonly name: string;
  readonly description: string;
  readonly kind: CaseKind;
  /** Which PostgreSQL server the PostgreSQL rows use. */
  readonly postgres: 'durable' | 'nosync';
  /** Only implementations on these backends (default: all). */
  readonly backends?: readonly BackendKind[];
  /** Only implementations with a batching mode. */
  readonly batched?: boolean;
  /** Only the Stratus implementations (an option no peer has): no ratios. */
  readonly stratusOnly?: boolean;
  /** Counts of throughput measurements are multiples of this. */
  readonly step: number;
  measure(context: MeasureContext, count: number, capMs: number): Promise<Measurement>;
}

/** Opens a fresh queue, measures on it, removes it. */
async function onFreshQueue(
  context: MeasureContext,
  measure: (queue: QueueUnderTest) => Promise<Measurement>,
): Promise<Measurement> {
  const queue = await context.driver.openQueue(context.name);
  try {
    return await measure(queue);
  } finally {
    await queue.dispose();
  }
}

const addCases = (
  postgres: 'durable' | 'nosync',
  suffix: string,
  backends?: BackendKind[],
): CaseDefinition[] => [
  {
    name: `add-one${suffix}`,
    description: 'single adds, one at a time (sequential awaits)',
    kind: 'throughput',
    postgres,
    backends,
    step: 10,
    measure: (context, count, capMs) => onFreshQueue(context, (queue) => addOne(queue, count, capMs)),
  },
  {
    name: `add-concurrent${suffix}`,
    description: `single adds from ${PRODUCERS} concurrent producers, each awaiting its own (group commit territory)`,
    kind: 'throughput',
    postgres,
    backends,
    step: PRODUCERS,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) => addConcurrent(queue, count, capMs, PRODUCERS)),
  },
];

export const messagingCases: CaseDefinition[] = [
  ...addCases('durable', ''),
  {
    name: 'add-bulk',
    description: `bulk adds of ${BULK_BATCH} jobs per call, one call at a time`,
    kind: 'throughput',
    postgres: 'durable',
    step: BULK_BATCH,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) => addBulk(queue, count, capMs, BULK_BATCH)),
  },
  {
    name: 'process-c1',
    description: 'a prefilled queue drained by one worker at concurrency 1 (timed from the worker start)',
    kind: 'throughput',
    postgres: 'durable',
    step: 10,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) =>
        process(queue, count, capMs, { concurrency: 1, batched: false }, BULK_BATCH),
      ),
  },
  {
    name: 'process-c1-prefetch',
    description: `Stratus only: the same with prefetch ${C1_PREFETCH} (receives ahead, hiding the receive round trip)`,
    kind: 'throughput',
    postgres: 'durable',
    stratusOnly: true,
    step: 10,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) =>
        process(queue, count, capMs, { concurrency: 1, batched: false, prefetch: C1_PREFETCH }, BULK_BATCH),
      ),
  },
  {
    name: `process-c${HIGH_CONCURRENCY}`,
    description: `the same at concurrency ${HIGH_CONCURRENCY}, unbatched`,
    kind: 'throughput',
    postgres: 'durable',
    step: 10,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) =>
        process(queue, count, capMs, { concurrency: HIGH_CONCURRENCY, batched: false }, BULK_BATCH),
      ),
  },
  {
    name: 'process-batched',
    description: `the same at concurrency ${HIGH_CONCURRENCY} in each implementation's batching mode`,
    kind: 'throughput',
    postgres: 'durable',
    batched: true,
    step: 10,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) =>
        process(queue, count, capMs, { concurrency: HIGH_CONCURRENCY, batched: true }, BULK_BATCH),
      ),
  },
  {
    name: 'latency-idle',
    description: `enqueue-to-start latency: one job at a time into an idle queue with a running worker (${LATENCY_GAP_MS} ms apart)`,
    kind: 'latency',
    postgres: 'durable',
    step: 1,
    measure: (context, count, capMs) =>
      onFreshQueue(context, (queue) => idleLatency(queue, count, capMs, LATENCY_GAP_MS)),
  },
  {
    name: 'redelivery',
    description: 'time from SIGKILL of a worker process holding a job to the job starting in another worker',
    kind: 'redelivery',
    postgres: 'durable',
    step: 1,
    measure: (context, _count, capMs) =>
      redelivery(context.driver, context.spec, context.name, context.scale.lockMs, capMs),
  },
  ...addCases('nosync', '-nosync', ['postgres']),
];
