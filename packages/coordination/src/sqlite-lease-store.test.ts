import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sqliteFiles } from './fixtures/sqlite-files.js';
import { leaseStoreContract } from './lease-store.contract.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';

const { path: fileIn, open } = sqliteFiles('stratus-leases-');
let files = 0;

leaseStoreContract('sqlite', async () => new SqliteLeaseStore({ database: open(fileIn(`l-${++files}.db`)) }));

describe('SqliteLeaseStore', () => {
  it('shares leases between connections to one file, as processes do', async () => {
    const path = fileIn('shared.db');
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
