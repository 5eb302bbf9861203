import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite, type SqliteDatabase } from '@stratus/messaging';
import { leaseStoreContract } from './lease-contract.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-leases-'));
/** Every database the tests open: closed before the directory goes (their checkpointers write into it). */
const opened: SqliteDatabase[] = [];
const open = (path: string) => {
  const database = openSqlite(path);
  opened.push(database);
  return database;
};
after(() => {
  for (const database of opened) database.close();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});
let files = 0;

leaseStoreContract(
  'sqlite',
  async () => new SqliteLeaseStore({ database: open(join(directory, `l-${++files}.db`)) }),
);

describe('SqliteLeaseStore', () => {
  it('shares leases between connections to one file, as processes do', async () => {
    const path = join(directory, 'shared.db');
    const one = new SqliteLeaseStore({ database: open(path) });
    const two = new SqliteLeaseStore({ database: open(path) });
    assert.equal((await one.acquire({ name: 'n', owner: 'a', ttlMs: 1000, now: 1 })).acquired, true);
    assert.equal((await two.acquire({ name: 'n', owner: 'b', ttlMs: 1000, now: 2 })).acquired, false);
    assert.deepEqual(
      (await two.holders('n', 3)).map((h) => h.owner),
      ['a'],
    );
  });

  it('validates its options', () => {
    assert.throws(() => new SqliteLeaseStore({ database: {} as never }), /database/);
  });
});
