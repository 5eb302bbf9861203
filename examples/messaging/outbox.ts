// Transactional outbox: the message that announces a change is written in the same database transaction as the
// change, so there is never an order without its event or an event without its order. A relay (one at a time,
// under a lease) then sends the outbox's records to their queue or topic, in order; a crash between send and
// delete resends the same message id, which the destination's duplicate detection drops.
// Prints:
//   after the failed order: 1 order, 1 outbox record
//   relayed OrderPlaced for order 1
//   outbox records left: 0
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Messaging, OutboxRelay, SqliteMessageBackend, SqliteOutbox } from '@stratus/messaging';
import { openSqlite } from '@stratus/sql';

const dir = mkdtempSync(join(tmpdir(), 'stratus-outbox-'));
const database = openSqlite(join(dir, 'shop.db'));
database.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)');
const outbox = new SqliteOutbox({ database });

function placeOrder(id: number, item: string): void {
  database.transaction(() => {
    database.prepare('INSERT INTO orders (id, item) VALUES (?, ?)').run(id, item);
    outbox.add(
      { queue: 'order-events' },
      { body: { orderId: id, item }, id: `order-${id}`, subject: 'OrderPlaced' },
    );
    if (item === '') throw new Error('an order needs an item'); // rolls back the order and its message
  });
}
placeOrder(1, 'book');
try {
  placeOrder(2, '');
} catch {
  const orders = database.prepare('SELECT count(*) AS n FROM orders').get<{ n: number }>()!.n;
  console.log(
    `after the failed order: ${orders} order, ${(await outbox.pending(Date.now())).count} outbox record`,
  );
}

// The queues may live anywhere (PostgreSQL, Redis...); here in the same SQLite file.
const messaging = new Messaging({ backend: new SqliteMessageBackend({ database }) });
await messaging.createQueue('order-events');
const relay = new OutboxRelay({ store: outbox, messaging }).start();

const [message] = await messaging.queue<{ orderId: number }>('order-events').receive({ waitMs: 5_000 });
console.log(`relayed ${message!.subject} for order ${message!.body.orderId}`);
await message!.complete();

await relay.stop(); // gives the lease back for the next relay
console.log(`outbox records left: ${(await outbox.pending(Date.now())).count}`);
await messaging.close();
database.close();
rmSync(dir, { recursive: true, force: true });
