// Queues (the messaging primer): a producer sends, a receiver takes messages under a peek-lock and settles each one:
// complete (done), abandon (deliver it again) or dead-letter (set it aside with a reason). Here on SQLite, in a
// file that any number of processes on this host could share.
// Prints:
//   second send of order-1 accepted: false
//   received orders 1, 2, 3
//   order 2 is back, delivery 2
//   dead letter order-3: invalid (no such customer)
//   left in the queue: 0, dead-lettered: 1
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Messaging, SqliteMessageBackend } from '@stratus/messaging';

const dir = mkdtempSync(join(tmpdir(), 'stratus-queues-'));
const messaging = new Messaging({ backend: new SqliteMessageBackend({ path: join(dir, 'messages.db') }) });

await messaging.createQueue('orders', { lockDurationMs: 30_000, maxDeliveryCount: 5 });
const orders = messaging.queue<{ orderId: number }>('orders');

// The id is the duplicate-detection key: sending the same id again within the window stores nothing.
await orders.send({ orderId: 1 }, { id: 'order-1' });
const again = await orders.send({ orderId: 1 }, { id: 'order-1' });
console.log(`second send of order-1 accepted: ${again.accepted}`);
await orders.sendBatch([
  { body: { orderId: 2 }, id: 'order-2' },
  { body: { orderId: 3 }, id: 'order-3', subject: 'OrderPlaced', headers: { region: 'eu' } },
]);

// Peek-lock: the messages stay in the queue, invisible to other receivers until settled or the lock expires.
const [first, second, third] = await orders.receive({ max: 3 });
console.log(`received orders ${[first, second, third].map((message) => message?.body.orderId).join(', ')}`);
await first!.complete();
await second!.abandon();
await third!.deadLetter('invalid', 'no such customer');

const [redelivered] = await orders.receive({ waitMs: 1_000 });
console.log(`order ${redelivered!.body.orderId} is back, delivery ${redelivered!.deliveryCount}`);
await redelivered!.complete();

const [dead] = await orders.listDeadLetters();
console.log(`dead letter ${dead!.id}: ${dead!.deadLetterReason} (${dead!.deadLetterDescription})`);
const stats = await orders.stats();
console.log(`left in the queue: ${stats.length}, dead-lettered: ${stats.deadLettered}`);
// resendDeadLetters([dead.sequence]) would put it back; purgeDeadLetters() deletes them.

await messaging.close();
rmSync(dir, { recursive: true, force: true });
