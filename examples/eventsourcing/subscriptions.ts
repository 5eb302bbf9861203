// Subscriptions: a handler sees every event of the store in order, first the history (catch-up), then new appends
// as they commit (live, woken by the store). A named subscription stores its position (checkpoint) after each
// batch, so after a restart it resumes where it stopped: at least once, in order (see parked-events.ts for an
// event the handler keeps failing on).
// Prints:
//   catch-up: 1 OrderPlaced, 2 OrderPlaced
//   live: 3 OrderShipped
//   restarted after position 3: 4 OrderPlaced
import { EventStore, MemoryEventStoreBackend, type RecordedEvent } from '@stratus/eventsourcing';

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: {} }]);
await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: {} }]);

const seen: RecordedEvent[] = [];
const describe = (events: RecordedEvent[]) => events.map((e) => `${e.globalPosition} ${e.type}`).join(', ');
let subscription = store.subscribe({
  name: 'shipping-emails', // the checkpoint's name
  handler: async (event) => {
    seen.push(event); // a failing handler is retried with backoff
  },
});
await subscription.caughtUp;
console.log(`catch-up: ${describe(seen.splice(0))}`);

const shipped = subscription.events.once((event) => event.type === 'checkpointed' && event.position === 3);
await store.appendToStream('order-1', [{ type: 'OrderShipped', data: {} }]);
await shipped;
console.log(`live: ${describe(seen.splice(0))}`);
await subscription.stop();

// Meanwhile, another order; a new subscription of the same name starts after the checkpoint.
await store.appendToStream('order-3', [{ type: 'OrderPlaced', data: {} }]);
subscription = store.subscribe({ name: 'shipping-emails', handler: (event) => void seen.push(event) });
await subscription.caughtUp;
console.log(`restarted after position 3: ${describe(seen.splice(0))}`);
await subscription.stop();
await store.close();
