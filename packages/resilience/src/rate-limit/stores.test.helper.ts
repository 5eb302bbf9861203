/**
 * The contract tests of every algorithm run once per store: memory, Redis and PostgreSQL (the last two on
 * the test servers of @stratus/testkit, skipped with the reason when there are none). On Redis and
 * PostgreSQL the stores run on the test's virtual clock (`time: clock`), so every assertion is exact.
 */
import type { Clock } from '@stratus/core';
import { postgresForSuite, redisForSuite } from '@stratus/testkit';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { RateLimitStore } from './algorithm.js';
import { MemoryRateLimitStore } from './memory-store.js';
import { PostgresRateLimitStore } from './postgres-store.js';
import { RedisRateLimitStore } from './redis-store.js';

export interface StoreSuite {
  readonly label: 'memory' | 'redis' | 'postgres';
  /** Why the suite cannot run, or false. */
  readonly skip: string | false;
  /**
   * Options for a limiter of its own on this store, on `clock` (the store's time source too unless
   * `serverTime`): a fresh name, so tests never see each other's counters.
   */
  options(clock: Clock, serverTime?: boolean): { store: RateLimitStore; clock: Clock; name: string };
  /** Closes connections and drops what the suite created. */
  release(): Promise<void>;
}

let sequence = 0;

export async function storeSuites(name: string): Promise<StoreSuite[]> {
  return [memorySuite(), await redisSuite(name), await postgresSuite(name)];
}

function memorySuite(): StoreSuite {
  return {
    label: 'memory',
    skip: false,
    options: (clock) => ({ store: new MemoryRateLimitStore(), clock, name: `memory-${++sequence}` }),
    release: async () => {},
  };
}

async function redisSuite(name: string): Promise<StoreSuite> {
  const suite = await redisForSuite(name);
  if (suite.skip !== false) return unavailable('redis', suite.skip);
  const client = new Redis(suite.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  return {
    label: 'redis',
    skip: false,
    options: (clock, serverTime = false) => ({
      store: new RedisRateLimitStore({
        client,
        prefix: suite.keyPrefix,
        time: serverTime ? 'server' : clock,
      }),
      clock,
      name: `redis-${++sequence}`,
    }),
    release: async () => {
      await suite.release();
      client.disconnect();
    },
  };
}

async function postgresSuite(name: string): Promise<StoreSuite> {
  const suite = await postgresForSuite(name);
  if (suite.skip !== false) return unavailable('postgres', suite.skip);
  const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
  return {
    label: 'postgres',
    skip: false,
    options: (clock, serverTime = false) => ({
      store: new PostgresRateLimitStore({ pool, time: serverTime ? 'server' : clock, purgeIntervalMs: 0 }),
      clock,
      name: `postgres-${++sequence}`,
    }),
    release: async () => {
      await pool.end();
      await suite.release();
    },
  };
}

function unavailable(label: 'redis' | 'postgres', skip: string): StoreSuite {
  return {
    label,
    skip,
    options: () => {
      throw new Error(skip);
    },
    release: async () => {},
  };
}
