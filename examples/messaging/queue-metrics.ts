// Queue metrics: length, available, scheduled, in flight, session-waiting, dead letters and the oldest message's
// age of every queue and subscription, read at an interval by one collector and served as Prometheus text (or as
// OpenTelemetry gauges through @stratus/messaging/opentelemetry), for dashboards, alerts and autoscalers.
// Prints:
//   # TYPE stratus_queue_length gauge
//   stratus_queue_length{queue="audit",kind="subscription"} 1
//   stratus_queue_length{queue="emails",kind="queue"} 3
//   stratus_queue_scheduled{queue="emails",kind="queue"} 1
//   stratus_queue_in_flight{queue="emails",kind="queue"} 1
//   stratus_queue_dead_lettered{queue="emails",kind="queue"} 1
import {
  MemoryMessageBackend,
  Messaging,
  QueueMetricsCollector,
  queueMetricsPrometheus,
} from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('emails');
await messaging.createTopic('signups');
await messaging.subscribe('audit', { topics: 'signups' });
const emails = messaging.queue('emails');
await emails.sendBatch([
  { body: 'welcome' },
  { body: 'reset' },
  { body: 'bounce' },
  { body: 'digest', delayMs: 60_000 },
]);
await messaging.topic('signups').publish({ user: 'ada' });
const [first, second] = await emails.receive({ max: 2 });
await first!.deadLetter('bounced');
void second; // still locked: in flight

// Reads every queue's stats now and then every intervalMs; readers get the last snapshot without waiting.
const collector = new QueueMetricsCollector(messaging, { intervalMs: 5_000 }).start();
await collector.refresh(); // the first read, already under way since start()
console.log(queueMetricsPrometheus(collector.samples)); // e.g. the body of GET /metrics
collector.stop();
await messaging.close();
