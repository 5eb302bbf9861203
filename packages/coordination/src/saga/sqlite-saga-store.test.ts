import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sqliteFiles } from '../fixtures/sqlite-files.js';
import { sagaStoreContract } from './saga-store.contract.js';
import { SqliteSagaStore } from './sqlite-saga-store.js';

const { path: fileIn, open } = sqliteFiles('stratus-sagas-');
let files = 0;

sagaStoreContract('sqlite', async () => new SqliteSagaStore({ database: open(fileIn(`s-${++files}.db`)) }));

describe('SqliteSagaStore', () => {
  it('shares sagas between connections to one file, as processes do', async () => {
    const path = fileIn('shared.db');
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
