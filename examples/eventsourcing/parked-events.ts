// Poison events: a handler that keeps failing on one event (10 attempts by default, with backoff) does not hold up
// the others. The event is parked, with its error, and the subscription goes on; later events of the same stream
// (its ordering key) are parked behind it, so each stream keeps its order. Parked events are listed, retried or
// skipped, from the subscription or, in another process, from the store (`store.parked(name)`, `retryParked`,
// `skipParked`), and readiness checks can read `store.parkedCounts()`.
// Prints:
//   handled: order-2 OrderPlaced
//   parked: 1 OrderPlaced (failed after 3 attempts: Error: no address for order-1), 3 OrderShipped (blocked)
//   parked counts: {"invoices":2}
//   after the fix: order-1 OrderPlaced, order-1 OrderShipped
import { immediateBackoff } from '@stratus/core';
import { EventStore, MemoryEventStoreBackend, type RecordedEvent } from '@stratus/eventsourcing';

const store = new EventStore({ backend: new MemoryEventStoreBackend() });
await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: { address: null } }]);
await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: { address: 'Quai 3' } }]);
await store.appendToStream('order-1', [{ type: 'OrderShipped', data: {} }]);

const handled: string[] = [];
const addresses = new Map<string, string>();
const subscription = store.subscribe({
  name: 'invoices',
  maxAttempts: 3, // then the event is parked (onPoison: 'stop' would stop the subscription instead)
  retryBackoff: immediateBackoff(), // retry at once, for the example
  handler: (event: RecordedEvent) => {
    const address = (event.data as { address?: string | null }).address ?? addresses.get(event.streamName);
    if (address == null) throw new Error(`no address for ${event.streamName}`);
    handled.push(`${event.streamName} ${event.type}`);
  },
});
await subscription.caughtUp;
console.log(`handled: ${handled.splice(0).join(', ')}`);
const parked = await subscription.parked();
console.log(
  `parked: ${parked
    .map((p) =>
      p.reason === 'failed'
        ? `${p.position} ${p.eventType} (failed after ${p.attempts} attempts: ${p.error})`
        : `${p.position} ${p.eventType} (blocked)`,
    )
    .join(', ')}`,
);
console.log(`parked counts: ${JSON.stringify(await store.parkedCounts())}`);

// The cause fixed, the parked events are handled again, in order; the ones only blocked follow their stream's.
addresses.set('order-1', 'Rue 12');
const retried = subscription.events.once(
  (event) => event.type === 'parked-event-handled' && event.position === 3,
);
await subscription.retryParked([parked[0]?.position ?? 0]);
await retried;
console.log(`after the fix: ${handled.join(', ')}`);
await subscription.stop();
await store.close();
