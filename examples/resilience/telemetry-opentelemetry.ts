// Telemetry to OpenTelemetry: instrumentOpenTelemetry turns every Stratus event of the process into metrics (an
// event counter by component, name and event type, a histogram per duration field, a state gauge for breakers) and
// span events, with no wiring per policy. Use your SDK's exporter (OTLP, Prometheus) where this example reads memory.
// Prints:
//   stratus.resilience.events retry "payments" retry = 2
//   stratus.resilience.events retry "payments" success = 1
//   stratus.resilience.delay recorded 2 delays

import {
  AggregationTemporality,
  type HistogramMetricData,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { constantBackoff } from '@stratus/core';
import { retry } from '@stratus/resilience';
import { instrumentOpenTelemetry } from '@stratus/resilience/opentelemetry';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
const meterProvider = new MeterProvider({ readers: [reader] });
const instrumentation = instrumentOpenTelemetry({ meterProvider });

let calls = 0;
await retry({ name: 'payments', backoff: constantBackoff(5) }).execute(async () => {
  if (++calls < 3) throw Object.assign(new Error('Bad Gateway'), { status: 502 });
  return 'paid';
});

await reader.forceFlush();
const metrics = exporter
  .getMetrics()
  .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
for (const metric of metrics) {
  const name = metric.descriptor.name;
  if (name === 'stratus.resilience.events') {
    for (const point of metric.dataPoints) {
      const {
        'stratus.component': component,
        'stratus.name': policy,
        'stratus.event': type,
      } = point.attributes;
      console.log(`${name} ${component} "${policy}" ${type} = ${point.value}`);
    }
  } else if (name === 'stratus.resilience.delay') {
    const [point] = (metric as HistogramMetricData).dataPoints;
    console.log(`${name} recorded ${point?.value.count} delays`);
  }
}
instrumentation.dispose();
await meterProvider.shutdown();
