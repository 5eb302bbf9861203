// Distributed lock with a fencing token: a mutex across processes (a semaphore with `limit` > 1). Each hold gets
// a token that only grows; the store it protects checks the token inside the writing transaction and refuses one
// older than a token it already accepted, so a holder that paused past its lease (GC, a stalled VM) cannot
// overwrite the work of the holder that came after it.
// Prints:
//   while held: a second acquire gets nothing
//   hold 1 wrote invoice 1
//   hold 2 wrote invoice 2
//   late write with token 1 refused: ERR_STRATUS_STALE_FENCING_TOKEN
//   waiting for a held lock: ERR_STRATUS_LOCK_TIMEOUT
//   invoices: 1, 2
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LockTimeoutError,
  mutex,
  SqliteFence,
  SqliteLeaseStore,
  StaleFencingTokenError,
} from '@stratus/coordination';
import { openSqlite } from '@stratus/sql';

const dir = mkdtempSync(join(tmpdir(), 'stratus-lock-'));
const database = openSqlite(join(dir, 'billing.db'));
database.exec('CREATE TABLE invoices (number INTEGER PRIMARY KEY, token INTEGER NOT NULL)');
const fence = new SqliteFence({ database });
const lock = mutex({ store: new SqliteLeaseStore({ database }), name: 'invoices', ttlMs: 10_000 });

// The guarded write: the fence check and the write commit together, or neither does.
function writeInvoice(number: number, token: number): void {
  database.transaction(() => {
    fence.check('invoices', token);
    database.prepare('INSERT INTO invoices (number, token) VALUES (?, ?)').run(number, token);
  });
}

const first = await lock.acquire(); // renewed while held; first.signal aborts if the hold is lost
console.log(
  `while held: a second acquire gets ${(await lock.tryAcquire()) === undefined ? 'nothing' : 'a slot'}`,
);
writeInvoice(1, first.token);
console.log(`hold ${first.token} wrote invoice 1`);
await first.release();

// using(): acquire, run, release (also when the work throws).
await lock.using(async (hold) => {
  writeInvoice(2, hold.token);
  console.log(`hold ${hold.token} wrote invoice 2`);
});

try {
  writeInvoice(3, first.token); // the first holder, waking up late
} catch (error) {
  if (error instanceof StaleFencingTokenError)
    console.log(`late write with token ${error.token} refused: ${error.code}`);
}

const held = await lock.acquire();
try {
  await lock.acquire({ waitMs: 100 }); // retries with backoff up to waitMs
} catch (error) {
  if (error instanceof LockTimeoutError) console.log(`waiting for a held lock: ${error.code}`);
}
await held.release();

const invoices = database.prepare('SELECT number FROM invoices ORDER BY number').all<{ number: number }>();
console.log(`invoices: ${invoices.map((invoice) => invoice.number).join(', ')}`);
database.close();
rmSync(dir, { recursive: true, force: true });
