import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { postgresForSuite, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import { StaleFencingTokenError } from './errors.js';
import { MemoryFence, PostgresFence, SqliteFence } from './fencing.js';
import { sqliteFiles } from './fixtures/sqlite-files.js';

/** A fenced write, the way each guard is used: check and write together, or neither. */
interface FencedLog {
  write(resource: string, token: number, entry: string): Promise<void>;
  entries(): Promise<string[]>;
}

function fencingSuite(kind: string, open: () => Promise<FencedLog>, skip: string | false = false): void {
  describe(`fencing: ${kind}`, { skip }, () => {
    it('accepts equal and newer tokens and refuses older ones, with nothing written', async () => {
      const log = await open();
      await log.write('orders', 3, 'a');
      await log.write('orders', 3, 'b');
      await log.write('orders', 5, 'c');
      const refused = await log.write('orders', 4, 'stale').catch((error: unknown) => error);
      assert.ok(refused instanceof StaleFencingTokenError);
      assert.equal(refused.token, 4);
      assert.equal(refused.current, 5);
      await log.write('invoices', 1, 'other resource');
      assert.deepEqual(await log.entries(), ['a', 'b', 'c', 'other resource']);
    });

    it('refuses bad tokens and resources', async () => {
      const log = await open();
      await assert.rejects(log.write('orders', 0, 'x'), InvalidOptionsError);
      await assert.rejects(log.write('', 1, 'x'), InvalidOptionsError);
      assert.deepEqual(await log.entries(), []);
    });
  });
}

fencingSuite('memory', async () => {
  const fence = new MemoryFence();
  const entries: string[] = [];
  return {
    async write(resource, token, entry) {
      fence.check(resource, token);
      entries.push(entry);
    },
    entries: async () => entries,
  };
});

const { path: fileIn, open: openDatabase } = sqliteFiles('stratus-fencing-');
let files = 0;

fencingSuite('sqlite', async () => {
  const database = openDatabase(fileIn(`f-${++files}.db`));
  const fence = new SqliteFence({ database });
  database.exec('CREATE TABLE log (n INTEGER PRIMARY KEY, entry TEXT NOT NULL)');
  return {
    async write(resource, token, entry) {
      database.transaction(() => {
        database.prepare('INSERT INTO log (entry) VALUES (?)').run(entry);
        fence.check(resource, token);
      });
    },
    entries: async () =>
      database
        .prepare('SELECT entry FROM log ORDER BY n')
        .all<{ entry: string }>()
        .map((row) => row.entry),
  };
});

const suite = await postgresForSuite('coordination-fencing');
const pools: pg.Pool[] = [];
after(async () => {
  for (const pool of pools) await pool.end();
  await suite.release();
});
let schemas = 0;

fencingSuite(
  'postgres',
  async () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 2 });
    pools.push(pool);
    const schema = `fence_${++schemas}`;
    const fence = new PostgresFence({ pool, schema });
    await fence.migrate();
    await pool.query(`CREATE TABLE "${schema}".log (n serial PRIMARY KEY, entry text NOT NULL)`);
    return {
      async write(resource, token, entry) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query(`INSERT INTO "${schema}".log (entry) VALUES ($1)`, [entry]);
          await fence.check(client, resource, token);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        } finally {
          client.release();
        }
      },
      entries: async () =>
        (await pool.query<{ entry: string }>(`SELECT entry FROM "${schema}".log ORDER BY n`)).rows.map(
          (row) => row.entry,
        ),
    };
  },
  suite.skip,
);

describe('PostgresFence', { skip: suite.skip }, () => {
  it("reads the same tokens whatever pg's process-wide type parsers are", async () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 2 });
    pools.push(pool);
    const run = async () => {
      const fence = new PostgresFence({ pool, schema: `fence_${++schemas}` });
      await fence.migrate();
      await fence.check(pool, 'orders', 3);
      await fence.check(pool, 'orders', 5);
      const refused = await fence.check(pool, 'orders', 4).catch((error: unknown) => error);
      assert.ok(refused instanceof StaleFencingTokenError);
      return {
        refused: { token: refused.token, current: refused.current },
        orders: await fence.highest(pool, 'orders'),
        invoices: await fence.highest(pool, 'invoices'),
      };
    };
    const expected = await run();
    assert.deepEqual(expected, { refused: { token: 4, current: 5 }, orders: 5, invoices: 0 });
    assert.deepEqual(await withHostilePgTypes(run), expected);
  });
});
