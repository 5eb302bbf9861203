/**
 * Shared breakers on the real stores, each instance on its own connection: the half-open trial slots are
 * leased through the store's compare-and-set, so among many concurrent calls on two instances exactly the
 * configured number of trials run cluster-wide. Time is virtual (background rounds never fire on their own);
 * store calls are real I/O, awaited through `sync()` and the calls' own promises.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { randomId } from '@stratus/core';
import { flushMicrotasks, postgresForSuite, redisForSuite, VirtualClock, waitUntil } from '@stratus/testkit';
import { Redis } from 'ioredis';
import pg from 'pg';
import { BrokenCircuitError } from '../errors.js';
import { type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import { PostgresCircuitStateStore } from './postgres-state-store.js';
import { RedisCircuitStateStore } from './redis-state-store.js';
import type { CircuitStateStore } from './state-store.js';

const CALLS_PER_INSTANCE = 300;
const WAIT_MS = 10_000;

/** Resolves once `count` of `promises` have rejected, or fails after a bounded wait. */
function rejections(promises: readonly Promise<unknown>[], count: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let seen = 0;
    const timer = setTimeout(() => reject(new Error(`only ${seen} of ${count} rejections`)), WAIT_MS);
    for (const promise of promises) {
      promise.catch(() => {
        if (++seen === count) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}

async function trialsAreBoundedClusterWide(
  stores: () => [CircuitStateStore, CircuitStateStore],
): Promise<void> {
  for (const maxConcurrent of [1, 3]) {
    const clock = new VirtualClock();
    const key = `circuit-${randomId()}`;
    const breakers: CircuitBreakerPolicy[] = stores().map((store, i) =>
      circuitBreaker({
        clock,
        name: 'trials',
        openMs: 1000,
        trip: { kind: 'consecutive-failures', failures: 1 },
        halfOpen: { maxConcurrent, successesToClose: 100 },
        shared: {
          store,
          key,
          instanceId: `i${i}`,
          syncIntervalMs: 3_600_000,
          storeTimeoutMs: 3_600_000,
          subscribe: false,
        },
      }),
    );
    const [a, b] = breakers as [CircuitBreakerPolicy, CircuitBreakerPolicy];
    try {
      await Promise.all([a.sync(), b.sync()]);
      await assert.rejects(a.execute(() => Promise.reject(new Error('down'))));
      await a.sync(); // the opening is written
      await b.sync(); // and read by the other instance
      assert.equal(b.state, 'open');
      await clock.advance(1000);
      assert.deepEqual([a.state, b.state], ['half-open', 'half-open']);

      let release!: () => void;
      const gate = new Promise<string>((resolve) => {
        release = () => resolve('ok');
      });
      let started = 0;
      const calls = [a, b].flatMap((breaker) =>
        Array.from({ length: CALLS_PER_INSTANCE }, () =>
          breaker.execute(() => {
            started++;
            return gate;
          }),
        ),
      );
      await rejections(calls, calls.length - maxConcurrent);
      // The trials' own lease replies may come after every refusal: wait for them to start (a refused call never
      // runs, so no more than maxConcurrent can).
      await waitUntil(() => started >= maxConcurrent, `${maxConcurrent} trials started`);
      await flushMicrotasks();
      assert.equal(started, maxConcurrent);
      release();
      const outcomes = await Promise.allSettled(calls);
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, maxConcurrent);
      assert.ok(outcomes.every((o) => o.status === 'fulfilled' || o.reason instanceof BrokenCircuitError));
    } finally {
      await Promise.all(breakers.map((breaker) => breaker.dispose()));
    }
  }
}

describe('shared breakers on real stores', () => {
  describe('Redis', async () => {
    const redis = await redisForSuite('circuit-shared-stores');
    const clients: Redis[] = [];
    after(async () => {
      await redis.release();
      for (const client of clients) client.disconnect();
    });
    it('runs no more half-open trials cluster-wide than configured', { skip: redis.skip }, async () => {
      await trialsAreBoundedClusterWide(() => {
        const store = () => {
          const client = new Redis(redis.url ?? '', { maxRetriesPerRequest: 1 });
          clients.push(client);
          return new RedisCircuitStateStore({ client, keyPrefix: `${redis.keyPrefix}circuit:` });
        };
        return [store(), store()];
      });
    });
  });

  describe('PostgreSQL', async () => {
    const database = await postgresForSuite('circuit-shared-stores');
    const pools: pg.Pool[] = [];
    after(async () => {
      for (const pool of pools) await pool.end();
      await database.release();
    });
    it('runs no more half-open trials cluster-wide than configured', { skip: database.skip }, async () => {
      await trialsAreBoundedClusterWide(() => {
        const store = () => {
          const pool = new pg.Pool({ connectionString: database.url, max: 3 });
          pool.on('error', () => {}); // dropping the database at the end may cut a closing connection
          pools.push(pool);
          return new PostgresCircuitStateStore({ pool });
        };
        return [store(), store()];
      });
    });
  });
});
