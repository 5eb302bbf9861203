import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite } from '@stratus/testkit';
import pg from 'pg';
import { leaseStoreContract } from './lease-contract.js';
import { PostgresLeaseStore } from './postgres-lease-store.js';

const suite = await postgresForSuite('coordination-leases');
let schemas = 0;

describe('PostgresLeaseStore', { skip: suite.skip }, () => {
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

  leaseStoreContract(
    'postgres',
    async () => new PostgresLeaseStore({ pool: newPool(), schema: `lease_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresLeaseStore({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresLeaseStore({ pool: newPool(), schema: 'Bad' }), /schema/);
  });
});
