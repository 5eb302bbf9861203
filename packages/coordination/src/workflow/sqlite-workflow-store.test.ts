import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sqliteFiles } from '../fixtures/sqlite-files.js';
import { SqliteWorkflowStore } from './sqlite-workflow-store.js';
import { workflowStoreContract } from './workflow-store.contract.js';

// The stores' close() leaves their databases open: the fixture closes them before removing their directory.
const { path: fileIn, open } = sqliteFiles('stratus-workflows-');
let files = 0;

workflowStoreContract(
  'sqlite',
  async () => new SqliteWorkflowStore({ database: open(fileIn(`w-${++files}.db`)) }),
);

describe('SqliteWorkflowStore', () => {
  it('shares workflows between connections to one file, as processes do', async () => {
    const path = fileIn('shared.db');
    const one = new SqliteWorkflowStore({ database: open(path) });
    const two = new SqliteWorkflowStore({ database: open(path) });
    const first = { stepName: 'a', timeoutMs: 1_000, maxFailures: 3 };
    await one.submit({ workflowId: 'w', name: 'n', version: 1, input: '1', now: 1, first });
    const claimed = await two.claim({ schedulerId: 's', definitions: ['n@1'], limit: 5, now: 2 });
    assert.equal(claimed.length, 1);
    assert.deepEqual(await one.claim({ schedulerId: 's2', definitions: ['n@1'], limit: 5, now: 2 }), []);
    await one.close();
    await two.close();
  });

  it('validates its options', () => {
    assert.throws(() => new SqliteWorkflowStore({ database: {} as never }), /database/);
  });
});
