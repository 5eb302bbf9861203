import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import pg from 'pg';
import { PostgresWorkflowStore } from './postgres-workflow-store.js';
import { workflowStoreContract } from './workflow-store-contract.js';

const suite = await postgresForSuite('coordination-workflows');
let schemas = 0;

describe('PostgresWorkflowStore', { skip: suite.skip }, () => {
  const pools: pg.Pool[] = [];
  after(async () => {
    for (const pool of pools) await pool.end();
    await suite.release();
  });
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 8 });
    pool.on('error', () => {});
    pools.push(pool);
    return pool;
  };

  workflowStoreContract(
    'postgres',
    async () => new PostgresWorkflowStore({ pool: newPool(), schema: `wf_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresWorkflowStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresWorkflowStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
