import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import pg from 'pg';
import { PostgresSagaStore } from './postgres-saga-store.js';
import { sagaStoreContract } from './saga-store-contract.js';

const suite = await postgresForSuite('coordination-sagas');
let schemas = 0;

describe('PostgresSagaStore', { skip: suite.skip }, () => {
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

  sagaStoreContract(
    'postgres',
    async () => new PostgresSagaStore({ pool: newPool(), schema: `saga_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresSagaStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresSagaStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
