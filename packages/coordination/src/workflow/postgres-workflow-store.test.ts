import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools } from '@stratus/testkit';
import type pg from 'pg';
import { PostgresWorkflowStore } from './postgres-workflow-store.js';
import { workflowStoreContract } from './workflow-store-contract.js';

const suite = await postgresForSuite('coordination-workflows');
let schemas = 0;

describe('PostgresWorkflowStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  workflowStoreContract(
    'postgres',
    async () => new PostgresWorkflowStore({ pool: newPool(), schema: `wf_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresWorkflowStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresWorkflowStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
