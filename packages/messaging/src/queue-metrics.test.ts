import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DataPoint, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { VirtualClock } from '@stratus/testkit';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import { QueueMetricsCollector, queueMetricsPrometheus } from './queue-metrics.js';
import { instrumentQueueMetrics } from './telemetry/opentelemetry.js';

const T0 = Date.UTC(2026, 0, 1);

class TestReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

async function setup() {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
  await messaging.createQueue('orders');
  await messaging.createTopic('orders.placed');
  await messaging.subscribe('billing', { topics: 'orders.*' });
  await messaging.queue('orders').sendBatch([{ body: 1 }, { body: 2 }, { body: 3 }]);
  await clock.advance(4000);
  const [locked] = await messaging.queue('orders').receive();
  const [dead] = await messaging.queue('orders').receive();
  await dead?.deadLetter('test');
  await messaging.topic('orders.placed').publish({ n: 1 });
  return { clock, messaging, locked };
}

describe('Queue metrics', () => {
  it('snapshots every queue and subscription', async () => {
    const { messaging } = await setup();
    const collector = new QueueMetricsCollector(messaging);
    const samples = await collector.refresh();
    const orders = samples.find((s) => s.queue === 'orders');
    assert.deepEqual(orders?.stats, {
      available: 1,
      scheduled: 0,
      locked: 1,
      waiting: 0,
      deadLettered: 1,
      length: 2,
      oldestAgeMs: 4000,
    });
    assert.deepEqual(samples.find((s) => s.queue === 'billing')?.topics, ['orders.*']);
    assert.equal(collector.samples, samples);
  });

  it('writes the Prometheus text format', async () => {
    const { messaging } = await setup();
    const text = queueMetricsPrometheus(await new QueueMetricsCollector(messaging).refresh());
    assert.match(text, /^# TYPE stratus_queue_length gauge$/m);
    assert.match(text, /^stratus_queue_length\{queue="orders",kind="queue"\} 2$/m);
    assert.match(text, /^stratus_queue_in_flight\{queue="orders",kind="queue"\} 1$/m);
    assert.match(text, /^stratus_queue_dead_lettered\{queue="orders",kind="queue"\} 1$/m);
    assert.match(text, /^stratus_queue_oldest_age_seconds\{queue="orders",kind="queue"\} 4$/m);
    assert.match(text, /^stratus_queue_length\{queue="billing",kind="subscription"\} 1$/m);
  });

  it('refreshes on its interval once started', async () => {
    const { messaging, clock } = await setup();
    const collector = new QueueMetricsCollector(messaging, { queues: ['orders'], intervalMs: 1000 }).start();
    await clock.advance(0);
    assert.equal(collector.samples[0]?.stats.length, 2);
    await messaging.queue('orders').send(4);
    await clock.advance(1000);
    assert.equal(collector.samples[0]?.stats.length, 3);
    collector.stop();
    assert.equal(clock.pendingTimers, 0);
  });

  it('reports the snapshot as OpenTelemetry gauges', async () => {
    const { messaging } = await setup();
    const collector = new QueueMetricsCollector(messaging);
    await collector.refresh();
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const instrumentation = instrumentQueueMetrics(collector, { meterProvider });
    const { resourceMetrics } = await reader.collect();
    const metrics = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
    const length = metrics.find((m) => m.descriptor.name === 'stratus.queue.length');
    const points = (length?.dataPoints ?? []) as DataPoint<number>[];
    assert.deepEqual(
      points.map((p) => [p.attributes['stratus.queue'], p.attributes['stratus.queue.kind'], p.value]).sort(),
      [
        ['billing', 'subscription', 1],
        ['orders', 'queue', 2],
      ],
    );
    assert.ok(metrics.some((m) => m.descriptor.name === 'stratus.queue.oldest_age_seconds'));
    instrumentation.dispose();
  });
});
