// Materialized views (the read side of CQRS): a projection runner applies the store's events to a view's tables;
// each batch's writes and the position the view reached commit in one transaction, so a crash mid-batch leaves
// nothing half-applied. One runner per view is active at a time (a lease). Bumping the version rebuilds the view
// beside the serving one, which it replaces once caught up (blue/green).
// Prints:
//   v1: order-1 3 seats, order-2 2 seats
//   active version: 1
//   v2: order-1 3 seats paid, order-2 2 seats open
//   active version: 2
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  activeVersion,
  EventStore,
  type Projection,
  ProjectionRunner,
  SqliteEventStoreBackend,
  SqliteProjectionTarget,
} from '@stratus/eventsourcing';
import { openSqlite, type SqliteDatabase } from '@stratus/sql';

// One SQLite file for the events and the views.
const dir = mkdtempSync(join(tmpdir(), 'stratus-views-'));
const database = openSqlite(join(dir, 'app.db'));
const store = new EventStore({ backend: new SqliteEventStoreBackend({ database }) });
const target = new SqliteProjectionTarget({ database });
await store.appendToStream('order-1', [
  { type: 'OrderPlaced', data: { seats: 3 } },
  { type: 'OrderPaid', data: {} },
]);
await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: { seats: 2 } }]);

const ordersV1: Projection<SqliteDatabase> = {
  name: 'orders',
  version: 1,
  eventTypes: ['OrderPlaced'],
  setup: (db, v) => db.exec(`CREATE TABLE orders_v${v} (id TEXT PRIMARY KEY, seats INTEGER NOT NULL)`),
  // Synchronous on SQLite: it runs inside the batch's transaction.
  apply: (db, event, v) => {
    const { seats } = event.data as { seats: number };
    db.prepare(`INSERT INTO orders_v${v} VALUES (?, ?)`).run(event.streamName, seats);
  },
};
const v1 = new ProjectionRunner(store, target, ordersV1);
const v1Serving = v1.events.once((event) => event.type === 'activated'); // after its first catch-up
void v1.start(); // runs until stop(); another process's runner takes over within leaseMs if this one dies
await v1Serving;
const rows = database.prepare('SELECT * FROM orders_v1 ORDER BY id').all<{ id: string; seats: number }>();
console.log(`v1: ${rows.map((row) => `${row.id} ${row.seats} seats`).join(', ')}`);
console.log(`active version: ${await activeVersion(target, 'orders')}`);

// Version 2 adds a status column: it builds from the first event in its own table while v1 keeps serving.
const v2 = new ProjectionRunner(store, target, {
  ...ordersV1,
  version: 2,
  eventTypes: ['OrderPlaced', 'OrderPaid'],
  setup: (db, v) => db.exec(`CREATE TABLE orders_v${v} (id TEXT PRIMARY KEY, seats INTEGER, status TEXT)`),
  apply: (db, event, v) => {
    if (event.type === 'OrderPlaced') {
      const { seats } = event.data as { seats: number };
      db.prepare(`INSERT INTO orders_v${v} VALUES (?, ?, 'open')`).run(event.streamName, seats);
    } else db.prepare(`UPDATE orders_v${v} SET status = 'paid' WHERE id = ?`).run(event.streamName);
  },
});
const v2Serving = v2.events.once((event) => event.type === 'activated');
void v2.start();
await v2Serving;
const v2rows = database
  .prepare('SELECT * FROM orders_v2 ORDER BY id')
  .all<{ id: string; seats: number; status: string }>();
console.log(`v2: ${v2rows.map((row) => `${row.id} ${row.seats} seats ${row.status}`).join(', ')}`);
console.log(`active version: ${await activeVersion(target, 'orders')}`); // v1 retired: its runner stops itself

await v1.stop();
await v2.stop();
await store.close();
database.close();
rmSync(dir, { recursive: true, force: true });
