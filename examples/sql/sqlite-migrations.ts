// Opening SQLite and migrating: openSqlite configures a file for several processes at once (WAL journal, a busy
// timeout, foreign keys) on node:sqlite (Node 22+) or better-sqlite3 (Node 20), and migrateSqlite brings one
// component's tables up to date, each component with its own version, safely when processes start together.
// Prints:
//   journal mode: wal
//   schema version of "orders": 2
//   order-1 has status placed
//   migrating again changes nothing: version 2
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrateSqlite, openSqlite, schemaVersion } from '@stratus/sql';

const dir = mkdtempSync(join(tmpdir(), 'stratus-example-'));
const database = openSqlite(join(dir, 'app.db'));
const mode = database.prepare('PRAGMA journal_mode').get<{ journal_mode: string }>();
console.log(`journal mode: ${mode?.journal_mode}`);

// migrations[i] takes the schema from version i to i + 1: only ever append to this list.
const migrations = [
  'CREATE TABLE orders (id TEXT PRIMARY KEY, seats INTEGER NOT NULL)',
  "ALTER TABLE orders ADD COLUMN status TEXT NOT NULL DEFAULT 'placed'",
];
migrateSqlite(database, 'orders', migrations);
console.log(`schema version of "orders": ${schemaVersion(database, 'orders')}`);

database.prepare('INSERT INTO orders (id, seats) VALUES (?, ?)').run('order-1', 2);
const row = database.prepare('SELECT status FROM orders WHERE id = ?').get<{ status: string }>('order-1');
console.log(`order-1 has status ${row?.status}`);

migrateSqlite(database, 'orders', migrations); // up to date: one read
console.log(`migrating again changes nothing: version ${schemaVersion(database, 'orders')}`);

database.close();
rmSync(dir, { recursive: true, force: true });
