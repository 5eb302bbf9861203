// Event Sourcing: state is stored as the sequence of events that produced it. Appends to a stream name the
// version they expect (optimistic concurrency: a stale writer is refused and writes nothing), an append repeated
// with the same event ids is a no-op, and every event gets a per-stream version and a global position. Here on
// SQLite in a temporary directory.
// Prints:
//   order-1 at version 2, positions 1-2
//   stale append refused: ERR_STRATUS_WRONG_EXPECTED_VERSION (at version 2)
//   retried append written again: false
//   order-1: 1 OrderPlaced {"seats":2}, 2 SeatsAdded {"seats":1}
//   all: 1 order-1, 2 order-1, 3 order-2
//   order streams: order-1 (v2), order-2 (v1)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventStore, SqliteEventStoreBackend, WrongExpectedVersionError } from '@stratus/eventsourcing';

const dir = mkdtempSync(join(tmpdir(), 'stratus-events-'));
const store = new EventStore({ backend: new SqliteEventStoreBackend({ path: join(dir, 'events.db') }) });

const placed = await store.appendToStream(
  'order-1',
  [
    { type: 'OrderPlaced', data: { seats: 2 }, id: 'cmd-1:0' },
    { type: 'SeatsAdded', data: { seats: 1 }, id: 'cmd-1:1' },
  ],
  { expectedVersion: 'no-stream', correlationId: 'cmd-1' },
);
console.log(
  `order-1 at version ${placed.nextExpectedVersion}, positions ${placed.firstPosition}-${placed.lastPosition}`,
);

try {
  // A writer that loaded the stream at version 1 is too late.
  await store.appendToStream('order-1', [{ type: 'OrderCancelled', data: {} }], { expectedVersion: 1 });
} catch (error) {
  if (error instanceof WrongExpectedVersionError)
    console.log(`stale append refused: ${error.code} (at version ${error.actual})`);
}

// The same command retried (same event ids): recognised, nothing written twice.
const retried = await store.appendToStream(
  'order-1',
  [
    { type: 'OrderPlaced', data: { seats: 2 }, id: 'cmd-1:0' },
    { type: 'SeatsAdded', data: { seats: 1 }, id: 'cmd-1:1' },
  ],
  { expectedVersion: 'no-stream' },
);
console.log(`retried append written again: ${retried.written}`);
await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: { seats: 4 } }]);

const events = await store.readStream('order-1'); // or { from, direction: 'backwards', maxCount }
console.log(
  `order-1: ${events.map((e) => `${e.streamVersion} ${e.type} ${JSON.stringify(e.data)}`).join(', ')}`,
);
const all = await store.readAll({ after: 0, maxCount: 100 });
console.log(`all: ${all.map((e) => `${e.globalPosition} ${e.streamName}`).join(', ')}`);
const streams = await store.listStreams({ category: 'order' });
console.log(`order streams: ${streams.map((s) => `${s.streamName} (v${s.version})`).join(', ')}`);

await store.close();
rmSync(dir, { recursive: true, force: true });
