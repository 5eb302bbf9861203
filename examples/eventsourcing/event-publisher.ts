// Publishing events: the event store is the outbox. A checkpointed subscription publishes each appended event to a
// messaging topic, in order; message ids are `<stream>_<version>`, so a republish after a crash is a duplicate the
// subscribers' queues drop. The stream is the session id (per-aggregate order) and the type is the subject.
// Prints:
//   order-1_1 OrderPlaced (session order-1), data {"seats":2}
//   order-1_2 OrderPaid (session order-1), data {"amount":90}
//   order-2_1 OrderPlaced (session order-2), data {"seats":1}
import {
  EventPublisher,
  EventStore,
  MemoryEventStoreBackend,
  type PublishedEvent,
} from '@stratus/eventsourcing';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createTopic('orders');
await messaging.subscribe('billing', { topics: 'orders', filter: { subject: ['OrderPlaced', 'OrderPaid'] } });

const publisher = new EventPublisher(store, {
  name: 'orders', // its checkpoint: publisher:orders
  messaging,
  topic: (event) => (event.streamName.startsWith('order-') ? 'orders' : undefined), // undefined: not published
});
await store.appendToStream('order-1', [
  { type: 'OrderPlaced', data: { seats: 2 } },
  { type: 'OrderPaid', data: { amount: 90 } },
]);
await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: { seats: 1 } }]);
await store.appendToStream('customer-9', [{ type: 'CustomerRegistered', data: {} }]);

// Started after the appends, it catches up first (then follows new appends), as after a restart.
const publishing = publisher.start();
await publishing.caughtUp;
const received = await messaging.queue<PublishedEvent>('billing').receive({ max: 10 });
for (const message of received) {
  console.log(
    `${message.id} ${message.subject} (session ${message.sessionId}), data ${JSON.stringify(message.body.data)}`,
  );
}
await publisher.stop();
await messaging.close();
await store.close();
