import { type MeterProvider, metrics } from '@opentelemetry/api';
import { type QueueMetricsCollector, queueGauges } from '../queue-metrics.js';

export interface QueueMetricsInstrumentation {
  dispose(): void;
}

/**
 * Exposes a collector's snapshot as OpenTelemetry observable gauges `stratus.queue.<name>` (length, available,
 * scheduled, in_flight, waiting, dead_lettered, oldest_age_seconds) with `stratus.queue` and `stratus.queue.kind`
 * (queue or subscription) attributes. Start the collector for the values to move. Consumer events (completed,
 * failed, dead-lettered, lock lost) reach OpenTelemetry through `@stratus/resilience/opentelemetry`, which
 * observes every Stratus event of the process.
 */
export function instrumentQueueMetrics(
  collector: QueueMetricsCollector,
  options: { meterProvider?: MeterProvider } = {},
): QueueMetricsInstrumentation {
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter('@stratus/messaging');
  const gauges = queueGauges.map((gauge) =>
    meter.createObservableGauge(`stratus.queue.${gauge.name}`, {
      description: gauge.help,
      unit: gauge.name.endsWith('_seconds') ? 's' : '{message}',
    }),
  );
  const callback = meter.addBatchObservableCallback.bind(meter);
  const observe = (result: Parameters<Parameters<typeof callback>[0]>[0]) => {
    for (const sample of collector.samples) {
      const attributes = {
        'stratus.queue': sample.queue,
        'stratus.queue.kind': sample.topics === undefined ? 'queue' : 'subscription',
      };
      queueGauges.forEach((gauge, i) => {
        result.observe(gauges[i] as (typeof gauges)[number], gauge.value(sample.stats), attributes);
      });
    }
  };
  meter.addBatchObservableCallback(observe, gauges);
  return {
    dispose() {
      meter.removeBatchObservableCallback(observe, gauges);
    },
  };
}
