import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/messaging';
import { leaseStoreContract } from './lease-contract.js';
import { SqliteLeaseStore } from './sqlite-lease-store.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-leases-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;

leaseStoreContract(
  'sqlite',
  async () => new SqliteLeaseStore({ database: openSqlite(join(directory, `l-${++files}.db`)) }),
);

describe('SqliteLeaseStore', () => {
  it('shares leases between connections to one file, as processes do', async () => {
    const path = join(directory, 'shared.db');
    const one = new SqliteLeaseStore({ database: openSqlite(path) });
    const two = new SqliteLeaseStore({ database: openSqlite(path) });
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
