// Inbox (idempotent receiver): delivery is at least once, so a message can come again (its handler crashed after
// its effect committed, before the message was completed). The inbox records the message id in the same
// transaction as the handler's effect; a redelivery finds the record and changes nothing.
// Prints:
//   delivery 1: credited
//   delivery 2: duplicate, skipped
//   balance: 100
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryMessageBackend, Messaging, SqliteInbox } from '@stratus/messaging';
import { openSqlite } from '@stratus/sql';

const dir = mkdtempSync(join(tmpdir(), 'stratus-inbox-'));
const database = openSqlite(join(dir, 'accounts.db'));
database.exec(
  "CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL); INSERT INTO accounts VALUES ('a-1', 0)",
);
const inbox = new SqliteInbox({ database });

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('payments');
await messaging.queue('payments').send({ account: 'a-1', amount: 100 }, { id: 'payment-1' });

for (let attempt = 1; attempt <= 2; attempt++) {
  const [message] = await messaging.queue<{ account: string; amount: number }>('payments').receive();
  // `consumer` names this handler: another handler of the same message keeps its own record.
  const outcome = inbox.process('credit-account', message!.id, () => {
    database
      .prepare('UPDATE accounts SET balance = balance + ? WHERE id = ?')
      .run(message!.body.amount, message!.body.account);
  });
  console.log(`delivery ${message!.deliveryCount}: ${outcome.duplicate ? 'duplicate, skipped' : 'credited'}`);
  // The first time, act as if the process died before completing: the message comes back.
  if (attempt === 1) await message!.abandon();
  else await message!.complete();
}
// In a consumer: messaging.consume('payments', sqliteInboxHandler(inbox, 'credit-account', (message) => ...)).

const { balance } = database
  .prepare("SELECT balance FROM accounts WHERE id = 'a-1'")
  .get<{ balance: number }>()!;
console.log(`balance: ${balance}`);
await messaging.close();
database.close();
rmSync(dir, { recursive: true, force: true });
