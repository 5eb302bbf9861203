// Publisher-Subscriber: a publisher sends to a topic without knowing who listens; every durable subscription (a
// queue with its own backlog, consumers and dead letters) gets its own copy of each message whose topic matches its
// patterns (`*` one segment, `#` any number) and whose subject and headers pass its filter.
// Prints:
//   orders.created {"region":"eu","size":"large"} -> audit, billing, shipping
//   orders.created {"region":"us"} -> audit, billing
//   orders.cancelled {"region":"eu"} -> audit, billing
//   payments.received {} -> audit
//   late subscriber replays 3 retained order messages
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
// Topics are created up front; this one keeps messages an hour so that new subscriptions can replay them.
await messaging.createTopic('orders.created', { retentionMs: 3_600_000 });
await messaging.createTopic('orders.cancelled', { retentionMs: 3_600_000 });
await messaging.createTopic('payments.received');

// Subscriptions are queues; subscribe creates the queue when it does not exist yet.
await messaging.subscribe('audit', { topics: '#' });
await messaging.subscribe('billing', { topics: 'orders.*' });
await messaging.subscribe('shipping', {
  topics: 'orders.created',
  filter: { headers: { region: ['eu', 'uk'], size: { exists: true } } },
});

async function publish(topic: string, headers: Record<string, string> = {}): Promise<void> {
  const { deliveredTo } = await messaging.topic(topic).publish({ topic }, { subject: topic, headers });
  console.log(`${topic} ${JSON.stringify(headers)} -> ${[...deliveredTo].sort().join(', ')}`);
}
await publish('orders.created', { region: 'eu', size: 'large' });
await publish('orders.created', { region: 'us' });
await publish('orders.cancelled', { region: 'eu' });
await publish('payments.received');

// A subscription made later starts from now, unless it asks for the retained messages.
await messaging.subscribe('analytics', { topics: 'orders.#', replay: 'retained' });
const replayed = await messaging.queue('analytics').receive({ max: 10 });
console.log(`late subscriber replays ${replayed.length} retained order messages`);

await messaging.close();
