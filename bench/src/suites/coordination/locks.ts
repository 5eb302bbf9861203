/**
 * The lock implementations: Stratus `mutex()` on its Redis, PostgreSQL and SQLite lease stores, redlock and
 * redis-semaphore's Mutex on the same Redis. Every lock has a 10 s lease and retries a held key every 10 ms
 * (redis-semaphore's default interval; Stratus and redlock are set to it), waiting up to 30 s.
 */

import {
  type LeaseStore,
  mutex,
  PostgresLeaseStore,
  RedisLeaseStore,
  SqliteLeaseStore,
} from '@stratus/coordination';
import { constantBackoff } from '@stratus/core';
import { openSqlite } from '@stratus/sql';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';

export const LOCK_TTL_MS = 10_000;
export const RETRY_MS = 10;
export const WAIT_MS = 30_000;

export interface LockImplementation {
  readonly impl: string;
  readonly backend: 'redis' | 'postgres' | 'sqlite';
  readonly description: Record<string, unknown>;
  /** One caller's acquire + release of `key`, with a lock object of its own (built before the clock starts). */
  caller(key: string, caller: number): () => Promise<void>;
  afterEach(): Promise<void>;
  close(): Promise<void>;
}

function stratusLock(
  impl: string,
  backend: LockImplementation['backend'],
  store: LeaseStore,
  storeText: string,
  close: () => Promise<void>,
  afterEach: () => Promise<void> = async () => {},
): LockImplementation {
  return {
    impl,
    backend,
    description: {
      lock:
        `mutex({ ttlMs: ${LOCK_TTL_MS}, waitMs: ${WAIT_MS}, retryBackoff: constantBackoff(${RETRY_MS}) }); ` +
        'acquire() then release() of the hold (renewal every ttl / 3 while held)',
      store: storeText,
    },
    caller(key) {
      const lock = mutex({
        store,
        name: key,
        ttlMs: LOCK_TTL_MS,
        waitMs: WAIT_MS,
        retryBackoff: constantBackoff(RETRY_MS),
      });
      return async () => {
        const hold = await lock.acquire();
        if (!(await hold.release())) throw new Error(`${impl}: the hold was lost before its release`);
      };
    },
    afterEach,
    close,
  };
}

export function stratusRedisLock(client: Redis): LockImplementation {
  const store = new RedisLeaseStore({ client, prefix: 'bench:lease:' });
  return stratusLock(
    'stratus-redis',
    'redis',
    store,
    'RedisLeaseStore, a connection of its own',
    async () => {},
  );
}

export async function stratusPostgresLock(
  url: string,
  vacuum: () => Promise<void>,
): Promise<LockImplementation> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  const store = new PostgresLeaseStore({ pool });
  await store.migrate();
  return stratusLock(
    'stratus-postgres',
    'postgres',
    store,
    'PostgresLeaseStore on a pg Pool of 10 (durable server)',
    () => pool.end(),
    vacuum,
  );
}

export function stratusSqliteLock(path: string): LockImplementation {
  const database = openSqlite(path);
  const store = new SqliteLeaseStore({ database });
  return stratusLock(
    'stratus-sqlite',
    'sqlite',
    store,
    'SqliteLeaseStore on openSqlite defaults (WAL, synchronous NORMAL)',
    async () => database.close(),
  );
}

export function redlockLock(client: Redis): LockImplementation {
  // No automatic extension: acquire and release only, as the other rows do.
  const redlock = new Redlock([client], {
    retryCount: Math.ceil(WAIT_MS / RETRY_MS),
    retryDelay: RETRY_MS,
    retryJitter: 0,
  });
  redlock.on('error', () => {});
  return {
    impl: 'redlock',
    backend: 'redis',
    description: {
      version: 'redlock 5.0.0-beta.2 on one ioredis connection of its own',
      lock:
        `redlock.acquire([key], ${LOCK_TTL_MS}) then lock.release(); retryDelay ${RETRY_MS} ms, retryJitter 0, ` +
        `retryCount ${Math.ceil(WAIT_MS / RETRY_MS)} (defaults 200 ms, 100 ms, 10)`,
    },
    caller(key) {
      return async () => {
        const lock = await redlock.acquire([key], LOCK_TTL_MS);
        await lock.release();
      };
    },
    afterEach: async () => {},
    close: async () => {},
  };
}

export function redisSemaphoreLock(client: Redis): LockImplementation {
  return {
    impl: 'redis-semaphore',
    backend: 'redis',
    description: {
      version: 'redis-semaphore 5.8.0 Mutex on one ioredis connection of its own',
      lock:
        `new Mutex(client, key, { lockTimeout: ${LOCK_TTL_MS}, acquireTimeout: ${WAIT_MS}, retryInterval: ` +
        `${RETRY_MS} }) per caller; acquire() then release() (refresh every 0.8 × lockTimeout while held)`,
    },
    caller(key) {
      // redis-semaphore is typed against the root's ioredis 5; this client is ioredis 6, the same API.
      const lock = new Mutex(client as never, key, {
        lockTimeout: LOCK_TTL_MS,
        acquireTimeout: WAIT_MS,
        retryInterval: RETRY_MS,
      });
      return async () => {
        await lock.acquire();
        await lock.release();
      };
    },
    afterEach: async () => {},
    close: async () => {},
  };
}
