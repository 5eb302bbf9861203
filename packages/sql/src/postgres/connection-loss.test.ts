import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  postgresForSuite,
  suitePools,
  terminateConnections,
  terminatedByServer,
  terminateWhileHeld,
  waitUntil,
} from '@stratus/testkit';
import type pg from 'pg';
import { openOwnPool } from './connection.js';
import { checkOut } from './connection-loss.js';
import { migratePostgres } from './migrations.js';

const suite = await postgresForSuite('sql-connection-loss');

describe('a connection PostgreSQL ends', { skip: suite.skip }, () => {
  const url = suite.url as string;
  /** Pools of yours, as pg documents them: an 'error' listener on the pool, none on its clients. */
  const yours = suitePools(url, 2);
  const ours: pg.Pool[] = [];
  after(async () => {
    for (const pool of ours) await pool.end();
    await yours.end();
    await suite.release();
  });

  async function ownPool(): Promise<pg.Pool> {
    const pool = await openOwnPool({ connectionString: url, max: 2 });
    ours.push(pool);
    return pool;
  }

  const holders = [
    { name: 'from a pool openOwnPool opened', open: ownPool, take: (pool: pg.Pool) => pool.connect() },
    { name: 'taken with checkOut from a pool of yours', open: async () => yours.pool(), take: checkOut },
  ];
  for (const { name, open, take } of holders) {
    it(`checked out ${name}: fails its holder's query, not the process, and the pool connects anew`, async () => {
      const pool = await open();
      await terminateWhileHeld(url, async (work) => {
        const client = await take(pool);
        try {
          await work(client);
        } finally {
          client.release(true);
        }
      });
      assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
    });
  }

  it('idle in a pool openOwnPool opened: leaves the pool, and the next query connects anew', async () => {
    const pool = await ownPool();
    const clients = [await pool.connect(), await pool.connect()];
    for (const client of clients) await client.query("SELECT 'idle in the pool'");
    for (const client of clients) client.release();
    assert.equal(await terminateConnections(url, { statement: "'idle in the pool'" }), 2);
    await waitUntil(() => pool.totalCount === 0, 'the pool dropped both connections');
    assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
  });

  it('during migratePostgres on a pool of yours: it fails with 57P01 and undoes its steps; the next run migrates', async () => {
    const pool = yours.pool();
    const create = 'CREATE TABLE connection_loss.orders (id int)';
    const migrating = assert.rejects(
      migratePostgres(pool, 'connection_loss', 'orders', [create, 'SELECT pg_sleep(60)']),
      terminatedByServer,
    );
    assert.equal(await terminateConnections(url, { statement: 'pg_sleep(60)' }), 1);
    await migrating;
    await migratePostgres(pool, 'connection_loss', 'orders', [create]);
    const { rows } = await pool.query(
      "SELECT version FROM connection_loss.stratus_schema WHERE component = 'orders'",
    );
    assert.deepEqual(rows, [{ version: 1 }]);
  });
});
