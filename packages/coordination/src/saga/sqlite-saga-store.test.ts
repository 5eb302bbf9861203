import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite, type SqliteDatabase } from '@stratus/messaging';
import { sagaStoreContract } from './saga-store-contract.js';
import { SqliteSagaStore } from './sqlite-saga-store.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-sagas-'));
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

sagaStoreContract(
  'sqlite',
  async () => new SqliteSagaStore({ database: open(join(directory, `s-${++files}.db`)) }),
);

describe('SqliteSagaStore', () => {
  it('shares sagas between connections to one file, as processes do', async () => {
    const path = join(directory, 'shared.db');
    const one = new SqliteSagaStore({ database: open(path) });
    const two = new SqliteSagaStore({ database: open(path) });
    const record = {
      sagaId: 'shared',
      definition: 'trip',
      input: null,
      status: 'running' as const,
      steps: [],
      version: 1,
      createdAt: 1,
      updatedAt: 1,
    };
    assert.equal(await one.insert(record), true);
    assert.equal(await two.insert(record), false);
    assert.equal(await two.update({ ...record, version: 2, status: 'completed' }), true);
    assert.equal(await one.update({ ...record, version: 2, status: 'compensating' }), false);
    assert.equal((await one.get('shared'))?.status, 'completed');
  });

  it('validates its options', () => {
    assert.throws(() => new SqliteSagaStore({ database: {} as never }), /database/);
  });
});
