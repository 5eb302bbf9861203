// Inbox (idempotent receiver): delivery is at least once, so a message can come again (its handler crashed after
// its effect committed, before the message was completed). The inbox records the message id in the same
// transaction as the handler's effect; a redelivery finds the record and changes nothing.
// Prints:
//   deliveries: 2, effects: 1
//   balance: 100
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constantBackoff } from '@stratus/core';
import { MemoryMessageBackend, Messaging, SqliteInbox, sqliteInboxHandler } from '@stratus/messaging';
import { openSqlite } from '@stratus/sql';

interface Payment {
  readonly account: string;
  readonly amount: number;
}
const dir = mkdtempSync(join(tmpdir(), 'stratus-inbox-'));
const database = openSqlite(join(dir, 'accounts.db'));
database.exec(
  "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER); INSERT INTO accounts VALUES ('a-1', 0)",
);
const inbox = new SqliteInbox({ database });
const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('payments');
await messaging.queue('payments').send({ account: 'a-1', amount: 100 }, { id: 'payment-1' });

let effects = 0;
// The effect runs in a transaction with the record "credit-account processed payment-1", unless it exists.
const credit = sqliteInboxHandler<Payment>(inbox, 'credit-account', (message) => {
  effects++;
  database
    .prepare('UPDATE accounts SET balance = balance + ? WHERE id = ?')
    .run(message.body.amount, message.body.account);
});
const deliveries = await new Promise<number>((resolve) => {
  messaging.consume<Payment>(
    'payments',
    async (message, context) => {
      await credit(message, context);
      // A crash after the commit, before the completion: the message is delivered again.
      if (message.deliveryCount === 1) throw new Error('crashed before completing');
      resolve(message.deliveryCount);
    },
    { retryBackoff: constantBackoff(10) },
  );
});
console.log(`deliveries: ${deliveries}, effects: ${effects}`);

const { balance } = database
  .prepare("SELECT balance FROM accounts WHERE id = 'a-1'")
  .get<{ balance: number }>()!;
console.log(`balance: ${balance}`);
await messaging.close();
database.close();
rmSync(dir, { recursive: true, force: true });
