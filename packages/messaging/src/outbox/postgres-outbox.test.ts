import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, VirtualClock, waitUntil } from '@stratus/testkit';
import pg from 'pg';
import { PostgresInbox } from './inbox.js';
import { outboxContract } from './outbox.contract.js';
import { PostgresOutbox } from './postgres-outbox.js';

const server = await postgresForSuite('messaging-outbox');

describe('PostgreSQL outbox and inbox', { skip: server.skip }, () => {
  const pool = new pg.Pool({ connectionString: server.url, max: 8 });
  after(async () => {
    await pool.end();
    await server.release();
  });

  outboxContract('postgres', async (clock, table) => {
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
      // The LISTEN connection subscribes asynchronously: keep committing until a notification arrives.
      let n = 0;
      await waitUntil(async () => {
        await outbox.add(pool, { queue: 'orders' }, { body: n++ });
        return woken > 0;
      }, 'a NOTIFY reached the listener');
      assert.ok(woken > 0, 'the relay was notified');
    } finally {
      stop();
    }
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
});
