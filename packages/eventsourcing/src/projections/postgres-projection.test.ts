import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, terminateWhileHeld, waitUntil } from '@stratus/testkit';
import pg from 'pg';
import { EventStore } from '../event-store.js';
import { PostgresEventStoreBackend } from '../postgres/postgres-event-store.js';
import { PostgresProjectionTarget } from './postgres-projection-target.js';
import type { Projection } from './projection.js';
import { ProjectionRunner } from './projection-runner.js';
import { projectionTargetContract } from './projection-target.contract.js';
import { activeVersion } from './target.js';

const suite = await postgresForSuite('eventsourcing-projections-postgres');
let schemas = 0;

describe('PostgresProjectionTarget', { skip: suite.skip }, () => {
  const pools: pg.Pool[] = [];
  const stores: EventStore[] = [];
  after(async () => {
    for (const store of stores) await store.close();
    for (const pool of pools) await pool.end();
    await suite.release();
  });
  const newPool = () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
    pool.on('error', () => {});
    pools.push(pool);
    return pool;
  };

  projectionTargetContract('postgres', async () => {
    const schema = `pt_contract_${++schemas}`;
    const pool = newPool();
    const qualified = (table: string) => `"${schema}".${table}`;
    return {
      target: new PostgresProjectionTarget({ pool, schema }),
      createTable: async (tx, table) => {
        await tx.query(`CREATE TABLE ${qualified(table)} (id text PRIMARY KEY)`);
      },
      dropTable: async (tx, table) => {
        await tx.query(`DROP TABLE ${qualified(table)}`);
      },
      insert: async (tx, table, id) => {
        await tx.query(`INSERT INTO ${qualified(table)} (id) VALUES ($1)`, [id]);
      },
      ids: async (table) =>
        (await pool.query<{ id: string }>(`SELECT id FROM ${qualified(table)} ORDER BY id`)).rows.map(
          (r) => r.id,
        ),
    };
  });

  it('validates its options', () => {
    assert.throws(() => new PostgresProjectionTarget({ pool: {} as pg.Pool }), /pool/);
    assert.throws(() => new PostgresProjectionTarget({ pool: newPool(), schema: 'Bad-Name' }), /schema/);
  });

  it("runs a batch's statements with generic plans, for its transaction only", async () => {
    // One connection: the batch's, asked again after it.
    const pool = new pg.Pool({ connectionString: suite.url, max: 1 });
    pools.push(pool);
    const target = new PostgresProjectionTarget({ pool, schema: `pt_plans_${++schemas}` });
    await target.prepare('plans', 1, () => {});
    assert.equal(await target.acquireLease('plans', 1, 'me', 0, 60_000), true);
    let inBatch: unknown;
    const committed = await target.commit('plans', 1, 'me', 0, 5, 0, async (tx) => {
      inBatch = (await tx.query('SHOW plan_cache_mode')).rows[0]?.plan_cache_mode;
    });
    assert.equal(committed, true);
    assert.equal(inBatch, 'force_generic_plan');
    const client = await pool.connect();
    try {
      assert.equal((await client.query('SHOW plan_cache_mode')).rows[0]?.plan_cache_mode, 'auto');
    } finally {
      client.release();
    }
  });

  it('fails a batch whose connection PostgreSQL ends, keeps the process running, and commits the next', async () => {
    const url = suite.url as string;
    const target = new PostgresProjectionTarget({ pool: newPool(), schema: `pt_loss_${++schemas}` });
    await target.prepare('loss', 1, () => {});
    assert.equal(await target.acquireLease('loss', 1, 'me', 0, 60_000), true);
    const batch = (apply: (tx: pg.PoolClient) => Promise<void>) =>
      target.commit('loss', 1, 'me', 0, 5, 0, apply);
    await terminateWhileHeld(url, batch);
    assert.equal(await batch(async () => {}), true, 'the next batch commits');
    assert.equal((await target.versions('loss'))[0]?.position, 5);
  });

  it('runs an asynchronous projection over the PostgreSQL event store, blue/green', async () => {
    const schema = `pt_runner_${++schemas}`;
    const pool = newPool();
    const store = new EventStore({ backend: new PostgresEventStoreBackend({ pool, schema }) });
    stores.push(store);
    const target = new PostgresProjectionTarget({ pool, schema });
    const view = (version: number): Projection<pg.PoolClient> => ({
      name: 'balances',
      version,
      eventTypes: ['Deposited'],
      async setup(tx) {
        await tx.query(
          `CREATE TABLE "${schema}".balances_v${version} (id text PRIMARY KEY, total int NOT NULL)`,
        );
      },
      async apply(tx, event) {
        const amount = (event.data as { amount: number }).amount * (version === 2 ? 100 : 1);
        await tx.query(
          `INSERT INTO "${schema}".balances_v${version} (id, total) VALUES ($1, $2)
           ON CONFLICT (id) DO UPDATE SET total = balances_v${version}.total + excluded.total`,
          [event.streamName, amount],
        );
      },
    });
    const totals = async (version: number) =>
      (await pool.query(`SELECT id, total FROM "${schema}".balances_v${version} ORDER BY id`)).rows;
    for (let i = 1; i <= 3; i++) {
      await store.appendToStream(`acct-${i}`, [
        { type: 'Deposited', data: { amount: i } },
        { type: 'Noted', data: {} },
        { type: 'Deposited', data: { amount: 10 } },
      ]);
    }
    const v1 = new ProjectionRunner(store, target, view(1), {
      batchSize: 4,
      pollIntervalMs: 50,
      leaseMs: 600,
    });
    const v1Running = v1.start();
    await v1.caughtUp;
    await waitUntil(async () => (await activeVersion(target, 'balances')) === 1, 'version 1 serves');
    assert.deepEqual(await totals(1), [
      { id: 'acct-1', total: 11 },
      { id: 'acct-2', total: 12 },
      { id: 'acct-3', total: 13 },
    ]);
    await store.appendToStream('acct-1', [{ type: 'Deposited', data: { amount: 5 } }]);
    await waitUntil(async () => (await totals(1))[0]?.total === 16, 'a live event is applied');

    const v2 = new ProjectionRunner(store, target, view(2), { pollIntervalMs: 50, leaseMs: 600 });
    const v2Running = v2.start();
    await waitUntil(async () => (await activeVersion(target, 'balances')) === 2, 'version 2 took over');
    assert.deepEqual(
      (await totals(2)).map((row) => row.total),
      [1600, 1200, 1300],
    );
    await v1Running;
    assert.equal((await target.versions('balances'))[0]?.status, 'retired');
    await v2.stop();
    await v2Running;
  });
});
