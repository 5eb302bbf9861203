import { assertDuration, type TimerHandle } from '@stratus/core';
import type { QueueStats } from './backend.js';
import type { Messaging } from './messaging.js';

export interface QueueMetricsSample {
  readonly queue: string;
  /** Topic patterns the queue is subscribed to (a subscription), or undefined for a plain queue. */
  readonly topics: readonly string[] | undefined;
  readonly stats: QueueStats;
}

export interface QueueMetricsOptions {
  /** Queues to watch; default every queue of the backend (listed again at each refresh). */
  queues?: readonly string[];
  /** How often the stats are read; default 5 s. Readers get the last snapshot, never wait for the backend. */
  intervalMs?: number;
}

/**
 * Reads queue statistics (length, oldest message age, in flight, dead letters) for every queue and subscription at
 * an interval, and keeps the last snapshot for exporters and for an autoscaler or a dashboard to read without
 * touching the backend on their own schedule.
 */
export class QueueMetricsCollector {
  readonly messaging: Messaging;
  readonly #queues: readonly string[] | undefined;
  readonly #intervalMs: number;
  #samples: QueueMetricsSample[] = [];
  #timer: TimerHandle | undefined;
  #refreshing: Promise<QueueMetricsSample[]> | undefined;
  #stopped = true;

  constructor(messaging: Messaging, options: QueueMetricsOptions = {}) {
    const intervalMs = options.intervalMs ?? 5000;
    assertDuration('intervalMs', intervalMs, { allowZero: false });
    this.messaging = messaging;
    this.#queues = options.queues;
    this.#intervalMs = intervalMs;
  }

  /** The last snapshot (empty until the first refresh completed). */
  get samples(): readonly QueueMetricsSample[] {
    return this.#samples;
  }

  /** Reads every queue's stats now; concurrent calls share one read. */
  refresh(): Promise<QueueMetricsSample[]> {
    this.#refreshing ??= this.#read().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** Refreshes now and then every intervalMs until stop(); a failed read keeps the previous snapshot. */
  start(): this {
    if (!this.#stopped) return this;
    this.#stopped = false;
    const tick = () => {
      void this.refresh()
        .catch(() => this.#samples)
        .finally(() => {
          if (!this.#stopped)
            this.#timer = this.messaging.clock.setTimeout(tick, this.#intervalMs, { unref: true });
        });
    };
    tick();
    return this;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.messaging.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #read(): Promise<QueueMetricsSample[]> {
    const { backend, clock } = this.messaging;
    const [queues, subscriptions] = await Promise.all([
      this.#queues === undefined ? backend.listQueues() : Promise.resolve([...this.#queues]),
      backend.listSubscriptions(),
    ]);
    const topicsOf = new Map(subscriptions.map((subscription) => [subscription.queue, subscription.topics]));
    const now = clock.now();
    const samples: QueueMetricsSample[] = [];
    for (const queue of queues) {
      try {
        samples.push({ queue, topics: topicsOf.get(queue), stats: await backend.stats(queue, now) });
      } catch {
        // Deleted between listing and reading: it simply has no sample this time.
      }
    }
    this.#samples = samples;
    return samples;
  }
}

const GAUGES: readonly { name: string; help: string; value: (stats: QueueStats) => number }[] = [
  { name: 'length', help: 'Messages not yet completed or dead-lettered', value: (s) => s.length },
  { name: 'available', help: 'Messages deliverable now', value: (s) => s.available },
  { name: 'scheduled', help: 'Messages waiting for their delivery time', value: (s) => s.scheduled },
  { name: 'in_flight', help: 'Messages delivered and locked', value: (s) => s.locked },
  { name: 'waiting', help: 'Session messages queued behind their session head', value: (s) => s.waiting },
  { name: 'dead_lettered', help: 'Messages in the dead-letter queue', value: (s) => s.deadLettered },
  {
    name: 'oldest_age_seconds',
    help: 'Age of the oldest message not yet completed',
    value: (s) => s.oldestAgeMs / 1000,
  },
];

/** The snapshot in the Prometheus text exposition format (for a `/metrics` endpoint). */
export function queueMetricsPrometheus(
  samples: readonly QueueMetricsSample[],
  prefix = 'stratus_queue',
): string {
  const lines: string[] = [];
  for (const gauge of GAUGES) {
    const metric = `${prefix}_${gauge.name}`;
    lines.push(`# HELP ${metric} ${gauge.help}`, `# TYPE ${metric} gauge`);
    for (const sample of samples) {
      const kind = sample.topics === undefined ? 'queue' : 'subscription';
      lines.push(
        `${metric}{queue="${escapeLabel(sample.queue)}",kind="${kind}"} ${gauge.value(sample.stats)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** @internal The gauges, for the OpenTelemetry adapter. */
export const queueGauges = GAUGES;
