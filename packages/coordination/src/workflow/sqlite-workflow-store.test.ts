import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/messaging';
import { SqliteWorkflowStore } from './sqlite-workflow-store.js';
import { workflowStoreContract } from './workflow-store-contract.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-workflows-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;

workflowStoreContract(
  'sqlite',
  async () => new SqliteWorkflowStore({ database: openSqlite(join(directory, `w-${++files}.db`)) }),
);

describe('SqliteWorkflowStore', () => {
  it('shares workflows between connections to one file, as processes do', async () => {
    const path = join(directory, 'shared.db');
    const one = new SqliteWorkflowStore({ database: openSqlite(path) });
    const two = new SqliteWorkflowStore({ database: openSqlite(path) });
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
