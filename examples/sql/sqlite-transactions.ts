// Transactions on SQLite: `transaction` is BEGIN IMMEDIATE ... COMMIT (a nested call is a savepoint), and with
// `groupCommit` the `transactionAsync` calls of one event-loop turn share one commit, each in its own savepoint,
// so one caller's error undoes only its own writes. `afterCommit` runs a callback once the writes are committed.
// Prints:
//   3 transactions, 1 commit
//   order-1: committed
//   order-2: rolled back (no seats left)
//   order-3: committed
//   announced after commit: order-1, order-3
//   the inner savepoint was undone, the outer write kept: 3 orders
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateSqlite, openSqlite } from '@stratus/sql';
import { countStatementRuns } from '@stratus/testkit';

const dir = mkdtempSync(join(tmpdir(), 'stratus-example-'));
const database = openSqlite(join(dir, 'app.db'), { groupCommit: true });
migrateSqlite(database, 'orders', ['CREATE TABLE orders (id TEXT PRIMARY KEY, seats INTEGER NOT NULL)']);
const insert = database.prepare('INSERT INTO orders (id, seats) VALUES (?, ?)');

const commits = countStatementRuns(database, 'COMMIT');
const announced: string[] = [];
const place = (id: string, seats: number) =>
  database.transactionAsync(() => {
    if (seats > 4) throw new Error('no seats left');
    insert.run(id, seats);
    database.afterCommit(() => announced.push(id)); // dropped if these writes roll back
  });

// Three callers in the same turn: one write transaction, three savepoints.
const outcomes = await Promise.allSettled([place('order-1', 2), place('order-2', 9), place('order-3', 1)]);
console.log(`${outcomes.length} transactions, ${commits.count} commit`);
outcomes.forEach((outcome, i) => {
  const id = `order-${i + 1}`;
  if (outcome.status === 'fulfilled') console.log(`${id}: committed`);
  else console.log(`${id}: rolled back (${(outcome.reason as Error).message})`);
});
console.log(`announced after commit: ${announced.join(', ')}`);

// The synchronous form; a nested call runs in a savepoint of the outer transaction.
database.transaction(() => {
  insert.run('order-4', 1);
  try {
    database.transaction(() => {
      insert.run('order-5', 1);
      throw new Error('changed my mind');
    });
  } catch {
    // Only order-5 is undone.
  }
});
const count = database.prepare('SELECT count(*) AS n FROM orders').get<{ n: number }>();
console.log(`the inner savepoint was undone, the outer write kept: ${count?.n} orders`);

database.close();
rmSync(dir, { recursive: true, force: true });
