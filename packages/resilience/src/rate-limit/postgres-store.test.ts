import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { postgresForSuite, VirtualClock, waitUntil, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import { concurrencyLimit } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { PostgresRateLimitStore } from './postgres-store.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';
import type { RateLimitResult } from './types.js';

describe('postgres store options', () => {
  test('are validated', () => {
    const pool = { query: async () => ({ rows: [] }) } as never;
    assert.throws(() => new PostgresRateLimitStore({ pool: {} as never }), InvalidOptionsError);
    assert.throws(
      () => new PostgresRateLimitStore({ pool, tablePrefix: 'limits; DROP TABLE users' }),
      /tablePrefix/,
    );
    assert.throws(() => new PostgresRateLimitStore({ pool, tablePrefix: 'Mixed' }), /tablePrefix/);
    assert.throws(() => new PostgresRateLimitStore({ pool, purgeIntervalMs: -1 }), /purgeIntervalMs/);
    assert.throws(() => new PostgresRateLimitStore({ pool, time: 'local' as never }), /time/);
  });
});

const suite = await postgresForSuite('rate-limit-postgres-store');

describe('postgres store', { skip: suite.skip }, () => {
  const pool = new pg.Pool({ connectionString: suite.url, max: 2 });
  after(async () => {
    await pool.end();
    await suite.release();
  });

  test('creates its tables on first use, in a schema if asked', async () => {
    await pool.query('CREATE SCHEMA limits');
    const store = new PostgresRateLimitStore({ pool, tablePrefix: 'limits.rl', purgeIntervalMs: 0 });
    const limiter = tokenBucket({ store, name: 'api', capacity: 3, refillRate: 1 });
    assert.equal((await limiter.acquire('k')).remaining, 2);
    const { rows } = await pool.query("SELECT key FROM limits.rl_token_bucket WHERE key = 'api:k'");
    assert.equal(rows.length, 1);
  });

  test('stores on separate pools creating one table at once all succeed', async () => {
    // Each pool stands for a process; without turns, the losers of the catalog race fail on a unique index.
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: suite.url, max: 1 }));
    try {
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          pools.map((p) => {
            const store = new PostgresRateLimitStore({
              pool: p,
              tablePrefix: `race${round}`,
              purgeIntervalMs: 0,
            });
            return tokenBucket({ store, name: 'r', capacity: 1, refillRate: 1 }).acquire('k', 0);
          }),
        );
      }
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    const { rows } = await pool.query(
      "SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'race%'",
    );
    assert.equal(rows[0].n, 5);
  });

  test('purgeExpired deletes only the rows that are as good as new', async () => {
    const clock = new VirtualClock();
    const store = new PostgresRateLimitStore({ pool, tablePrefix: 'purge', time: clock, purgeIntervalMs: 0 });
    const limiter = fixedWindow({ store, name: 'p', limit: 5, windowMs: 1000 });
    await limiter.acquire('early');
    await clock.advance(1000);
    await limiter.acquire('late');
    assert.equal(await store.purgeExpired(), 1);
    const { rows } = await pool.query('SELECT key FROM purge_fixed_window ORDER BY key');
    assert.deepEqual(rows, [{ key: 'p:late' }]);
  });

  test('a purge timer deletes idle rows in the background until close()', async () => {
    const clock = new VirtualClock();
    const store = new PostgresRateLimitStore({
      pool,
      tablePrefix: 'timed',
      time: clock,
      purgeIntervalMs: 5000,
    });
    await fixedWindow({ store, name: 't', limit: 1, windowMs: 1000 }).acquire('k');
    const rows = async () =>
      (await pool.query('SELECT count(*)::int AS n FROM timed_fixed_window')).rows[0].n;
    assert.equal(await rows(), 1);
    await clock.advance(5000);
    await waitUntil(
      async () => (await rows()) === 0 && clock.pendingTimers > 0,
      'the purge has run and scheduled the next one',
    );
    assert.equal(await rows(), 0);
    assert.equal(clock.pendingTimers, 1, 'the next purge is scheduled');
    store.close();
    assert.equal(clock.pendingTimers, 0);
  });

  test("decides alike whatever pg's process-wide type parsers are", async () => {
    const run = async (tablePrefix: string) => {
      const clock = new VirtualClock({ now: 1_750_000_000_000 });
      const store = new PostgresRateLimitStore({ pool, tablePrefix, time: clock, purgeIntervalMs: 0 });
      const limiters = [
        tokenBucket({ store, name: 'bucket', capacity: 2, refillRate: 1 }),
        fixedWindow({ store, name: 'fixed', limit: 2, windowMs: 1000 }),
        gcra({ store, name: 'gcra', limit: 2, periodMs: 1000 }),
        slidingWindowLog({ store, name: 'log', limit: 2, windowMs: 1000 }),
        slidingWindowCounter({ store, name: 'counter', limit: 2, windowMs: 1000 }),
        concurrencyLimit({ store, name: 'concurrency', maxInFlight: 1, leaseMs: 5000 }),
      ];
      const results: (Omit<RateLimitResult, 'lease'> & { limiter: string; leased: boolean })[] = [];
      for (const limiter of limiters) {
        for (let i = 0; i < 3; i++) {
          const { lease, ...result } = await limiter.acquire('k');
          results.push({ limiter: limiter.name, ...result, leased: lease !== undefined });
          await lease?.release();
          await clock.advance(100);
        }
      }
      return results;
    };
    const expected = await run('types_default');
    assert.deepEqual(
      expected.filter((result) => !result.allowed).map((result) => result.limiter),
      ['bucket', 'fixed', 'gcra', 'log', 'counter'],
      'each refused its third request but the concurrency limiter, whose permit was released each time',
    );
    assert.deepEqual(await withHostilePgTypes(() => run('types_hostile')), expected);
  });
});
