import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools } from '@stratus/testkit';
import type pg from 'pg';
import { PostgresSagaStore } from './postgres-saga-store.js';
import { sagaStoreContract } from './saga-store-contract.js';

const suite = await postgresForSuite('coordination-sagas');
let schemas = 0;

describe('PostgresSagaStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  sagaStoreContract(
    'postgres',
    async () => new PostgresSagaStore({ pool: newPool(), schema: `saga_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresSagaStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresSagaStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
