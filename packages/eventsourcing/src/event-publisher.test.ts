import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock } from '@stratus/testkit';
import { EventPublisher, type PublishedEvent } from './event-publisher.js';
import { EventStore } from './event-store.js';
import { MemoryEventStoreBackend } from './memory/memory-event-store.js';

async function setup() {
  const clock = new VirtualClock({ now: 1_750_000_000_000 });
  const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
  const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock });
  for (const topic of ['orders', 'availability']) await messaging.createTopic(topic);
  await messaging.subscribe('order-view', { topics: 'orders', queue: { sessions: true } });
  await messaging.subscribe('seats-view', { topics: 'availability', queue: { sessions: true } });
  await messaging.subscribe('placed-only', { topics: 'orders', filter: { subject: 'OrderPlaced' } });
  const topic = (event: { streamName: string }) =>
    event.streamName.startsWith('order-')
      ? 'orders'
      : event.streamName.startsWith('seats-')
        ? 'availability'
        : undefined;
  return { clock, store, messaging, topic };
}

async function drain(messaging: Messaging, queue: string): Promise<PublishedEvent[]> {
  const received = await messaging.queue<PublishedEvent>(queue).receive({ max: 100 });
  for (const message of received) await message.complete();
  return received.map((message) => message.body);
}

describe('EventPublisher', () => {
  it('publishes every event to its topic with deterministic ids, per-stream sessions and the type as subject', async () => {
    const { store, messaging, topic } = await setup();
    await store.appendToStream(
      'order-1',
      [
        { type: 'OrderPlaced', data: { seats: 2 } },
        { type: 'OrderConfirmed', data: {} },
      ],
      { correlationId: 'cmd-1' },
    );
    await store.appendToStream('seats-9', [{ type: 'SeatsReserved', data: { n: 2 } }]);
    await store.appendToStream('audit-1', [{ type: 'Ignored', data: {} }]);
    const publisher = new EventPublisher(store, { name: 'main', messaging, topic });
    await publisher.start().caughtUp;
    const orders = await messaging.queue<PublishedEvent>('order-view').receive({ max: 10 });
    assert.deepEqual(
      orders.map((m) => [m.id, m.sessionId, m.subject, m.correlationId, m.body.type, m.body.data]),
      [['order-1_1', 'order-1', 'OrderPlaced', 'cmd-1', 'OrderPlaced', { seats: 2 }]],
      'one message of the session at a time',
    );
    await (orders[0] as (typeof orders)[number]).complete();
    assert.deepEqual(
      (await drain(messaging, 'order-view')).map((e) => e.type),
      ['OrderConfirmed'],
    );
    assert.deepEqual(
      (await drain(messaging, 'seats-view')).map((e) => [e.streamName, e.streamVersion]),
      [['seats-9', 1]],
    );
    assert.deepEqual(
      (await drain(messaging, 'placed-only')).map((e) => e.type),
      ['OrderPlaced'],
    );
    assert.equal(await store.backend.loadCheckpoint('publisher:main'), 4);
    await publisher.stop();
  });

  it('publishes again after a crash before its checkpoint moved, and duplicate detection drops the repeats', async () => {
    const { store, messaging, topic } = await setup();
    await store.appendToStream(
      'order-2',
      [1, 2, 3].map((n) => ({ type: 'OrderUpdated', data: { n } })),
    );
    const first = new EventPublisher(store, { name: 'p', messaging, topic });
    await first.start().caughtUp;
    await first.stop();
    // As if it crashed between publishing and storing its checkpoint.
    await store.backend.storeCheckpoint('publisher:p', 0);
    await store.appendToStream('order-2', [{ type: 'OrderUpdated', data: { n: 4 } }]);
    const second = new EventPublisher(store, { name: 'p', messaging, topic });
    await second.start().caughtUp;
    await second.stop();
    const seen: number[] = [];
    for (;;) {
      const batch = await drain(messaging, 'order-view');
      if (batch.length === 0) break;
      seen.push(...batch.map((e) => (e.data as { n: number }).n));
    }
    assert.deepEqual(seen, [1, 2, 3, 4]);
  });

  it('refuses bad options', async () => {
    const { store, messaging } = await setup();
    assert.throws(() => new EventPublisher(store, { name: '', messaging, topic: 't' }), /name/);
    assert.throws(
      () => new EventPublisher(store, { name: 'x', messaging: {} as never, topic: 't' }),
      /messaging/,
    );
    assert.throws(() => new EventPublisher(store, { name: 'x', messaging, topic: 42 as never }), /topic/);
  });
});
