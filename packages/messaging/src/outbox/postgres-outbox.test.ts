import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  postgresForSuite,
  suitePools,
  terminateConnections,
  terminateWhileHeld,
  VirtualClock,
  waitUntil,
  withHostilePgTypes,
} from '@stratus/testkit';
import type pg from 'pg';
import { PostgresInbox } from './inbox.js';
import type { OutboxRecord } from './outbox.js';
import { outboxStoreContract } from './outbox-store.contract.js';
import { PostgresOutbox } from './postgres-outbox.js';

const server = await postgresForSuite('messaging-outbox');

describe('PostgreSQL outbox and inbox', { skip: server.skip }, () => {
  const url = server.url as string;
  // A pool as pg documents it: an 'error' listener on the pool, none on its clients.
  const pools = suitePools(url, 8);
  const pool = pools.pool();
  after(async () => {
    await pools.end();
    await server.release();
  });

  outboxStoreContract('postgres', async (clock, table) => {
    const outbox = new PostgresOutbox({ pool, table, clock });
    await pool.query(`CREATE TABLE IF NOT EXISTS orders (id serial PRIMARY KEY, note text)`);
    const inTransaction = async (work: (client: pg.PoolClient) => Promise<void>, commit: boolean) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(`INSERT INTO orders (note) VALUES ('business change')`);
        await work(client);
        await client.query(commit ? 'COMMIT' : 'ROLLBACK');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    };
    return {
      store: outbox,
      addCommitted: (destination, messages) =>
        inTransaction((client) => outbox.add(client, destination, messages), true),
      addRolledBack: (destination, messages) =>
        inTransaction((client) => outbox.add(client, destination, messages), false),
      close: async () => {},
    };
  });

  it('wakes a listening relay through NOTIFY when the writing transaction commits', async () => {
    const outbox = new PostgresOutbox({ pool, table: `outbox_notify_${process.pid}` });
    await outbox.ensureSchema();
    let woken = 0;
    const stop = outbox.watch(() => woken++);
    try {
      await waitUntil(() => woken === 1, 'LISTEN took effect (which wakes the relay once)');
      await outbox.add(pool, { queue: 'orders' }, { body: 1 });
      await waitUntil(() => woken === 2, 'a NOTIFY reached the listener');
    } finally {
      stop();
    }
  });

  it('keeps a watching relay, and the process, through PostgreSQL ending its connections, during and after', async () => {
    const outbox = new PostgresOutbox({ pool, table: `outbox_loss_${process.pid}` });
    await outbox.ensureSchema();
    let woken = 0;
    const stop = outbox.watch(() => woken++);
    await waitUntil(() => woken === 1, 'LISTEN took effect');
    // The LISTEN connection and the pool's idle ones.
    assert.ok((await terminateConnections(url)) >= 1);
    await waitUntil(() => woken === 2, 'LISTEN took effect again', 10_000);
    await outbox.add(pool, { queue: 'orders' }, { body: 'after the loss' });
    await waitUntil(() => woken === 3, 'a NOTIFY reached the listener');

    stop();
    await waitUntil(() => pool.idleCount === pool.totalCount, 'the LISTEN connection is let go');
    await terminateConnections(url);
    await waitUntil(() => pool.totalCount === 0, 'the pool dropped the connections PostgreSQL ended');
    assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
    assert.equal(woken, 3, 'nothing after stop');
  });

  it("reads the same records whatever pg's process-wide type parsers are", async () => {
    // A table a run, so both runs number their records alike.
    const run = async (table: string) => {
      const clock = new VirtualClock({ now: 1_750_000_000_000 });
      const outbox = new PostgresOutbox({ pool, table, clock });
      await outbox.add(pool, { queue: 'orders' }, [
        { id: 'o-1', body: { total: 12.5 }, headers: { tenant: 't1' }, priority: 2 },
        { id: 'o-2', body: { total: 3 }, subject: 'note', ttlMs: 60_000 },
      ]);
      await clock.advance(250);
      await outbox.add(pool, { topic: 'orders.created' }, { id: 'o-3', body: [1, 2, 3] });
      const read = await outbox.read(10);
      await outbox.bury(read[1] as OutboxRecord, 'no such queue', clock.now());
      const dead = await outbox.listDead(10);
      const pending = await outbox.pending(clock.now() + 1000);
      const requeued = await outbox.requeueDead(dead.map((record) => record.sequence));
      return { read, dead, pending, requeued, reread: await outbox.read(10) };
    };
    const expected = await run(`outbox_types_default_${process.pid}`);
    assert.equal(expected.read.length, 3);
    assert.deepEqual(expected.dead[0]?.message.body, expected.read[1]?.message.body);
    assert.deepEqual(await withHostilePgTypes(() => run(`outbox_types_hostile_${process.pid}`)), expected);
  });

  it('the inbox runs an effect once even when two deliveries race', async () => {
    const inbox = new PostgresInbox({
      pool,
      table: `inbox_${process.pid}`,
      clock: new VirtualClock({ now: 1000 }),
    });
    await pool.query('CREATE TABLE IF NOT EXISTS inbox_effects (message text)');
    const effect = async (client: pg.PoolClient) => {
      await client.query(`INSERT INTO inbox_effects VALUES ('m-1')`);
      return 'done';
    };
    const results = await Promise.all([
      inbox.process('billing', 'm-1', effect),
      inbox.process('billing', 'm-1', effect),
      inbox.process('billing', 'm-1', effect),
    ]);
    assert.equal(results.filter((r) => !r.duplicate).length, 1);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM inbox_effects`);
    assert.equal(rows[0].n, 1);
    await assert.rejects(
      inbox.process('billing', 'm-2', async (client) => {
        await client.query(`INSERT INTO inbox_effects VALUES ('m-2')`);
        throw new Error('handler failed');
      }),
      /handler failed/,
    );
    assert.deepEqual(await inbox.process('billing', 'm-2', async () => 'retried'), {
      duplicate: false,
      result: 'retried',
    });
    const after = await pool.query(`SELECT count(*)::int AS n FROM inbox_effects WHERE message = 'm-2'`);
    assert.equal(after.rows[0].n, 0, 'the failed attempt was rolled back with its record');
  });

  it('the inbox fails a transaction whose connection PostgreSQL ends, and processes the message after', async () => {
    const inbox = new PostgresInbox({ pool, table: `inbox_loss_${process.pid}` });
    await pool.query('CREATE TABLE IF NOT EXISTS inbox_loss_effects (message text)');
    const effect = async (client: pg.PoolClient) => {
      await client.query(`INSERT INTO inbox_loss_effects VALUES ('m-1')`);
      return 'done';
    };

    await terminateWhileHeld(url, (work) =>
      inbox.process('billing', 'm-1', async (client) => {
        await work(client);
        return effect(client);
      }),
    );

    // Idle in the pool.
    assert.ok((await terminateConnections(url)) >= 1);
    await waitUntil(() => pool.totalCount === 0, 'the pool dropped the connections PostgreSQL ended');

    assert.deepEqual(await inbox.process('billing', 'm-1', effect), { duplicate: false, result: 'done' });
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM inbox_loss_effects');
    assert.equal(rows[0].n, 1, 'the failed attempts were rolled back with their records');
  });
});
