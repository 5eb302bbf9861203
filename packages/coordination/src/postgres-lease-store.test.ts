import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, suitePools } from '@stratus/testkit';
import type pg from 'pg';
import { leaseStoreContract } from './lease-contract.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';

const suite = await postgresForSuite('coordination-leases');
let schemas = 0;

describe('PostgresLeaseStore', { skip: suite.skip }, () => {
  const pools = suitePools(suite.url);
  after(async () => {
    await pools.end();
    await suite.release();
  });
  const newPool = () => pools.pool();

  leaseStoreContract(
    'postgres',
    async () => new PostgresLeaseStore({ pool: newPool(), schema: `lease_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresLeaseStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresLeaseStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
