// Event versioning: stored events are never rewritten, so when an event's shape changes, the new code declares
// the type's current schema version and an upcaster from each older one; events are brought up to date as they
// are read. The same registry validates data before it is appended and, when strict, refuses unknown types.
// Prints:
//   stored as schema 1: {"name":"Ada Lovelace"}
//   read as schema 2: {"firstName":"Ada","lastName":"Lovelace"}
//   refused: ERR_STRATUS_INVALID_EVENT (Invalid event #0 data: lastName is required)
//   refused: ERR_STRATUS_UNKNOWN_EVENT_TYPE (Unknown event type "CustomerDeleted")
import type { StratusError } from '@stratus/core';
import { EventStore, EventTypes, MemoryEventStoreBackend } from '@stratus/eventsourcing';

const backend = new MemoryEventStoreBackend();

// Last year's code wrote CustomerRegistered with one name field (schema version 1, the default).
const before = new EventStore({ backend });
await before.appendToStream('customer-7', [{ type: 'CustomerRegistered', data: { name: 'Ada Lovelace' } }]);

// This year's code: version 2 splits the name; upcasters[1] takes version 1 data to version 2.
const types = new EventTypes({
  CustomerRegistered: {
    schemaVersion: 2,
    upcasters: {
      1: (data) => {
        const [firstName, ...rest] = (data as { name: string }).name.split(' ');
        return { firstName, lastName: rest.join(' ') };
      },
    },
    validate: (data) => ((data as { lastName?: string }).lastName ? undefined : 'lastName is required'),
  },
});
const store = new EventStore({ backend, types });

const [stored] = await before.readStream('customer-7');
console.log(`stored as schema ${stored!.schemaVersion}: ${JSON.stringify(stored!.data)}`);
const [current] = await store.readStream('customer-7');
console.log(`read as schema ${current!.schemaVersion}: ${JSON.stringify(current!.data)}`);

for (const event of [
  { type: 'CustomerRegistered', data: { firstName: 'Grace' } },
  { type: 'CustomerDeleted', data: {} },
]) {
  try {
    await store.appendToStream('customer-8', [event]);
  } catch (error) {
    const { code, message } = error as StratusError;
    console.log(`refused: ${code} (${message})`);
  }
}
await store.close();
