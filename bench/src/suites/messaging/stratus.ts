/**
 * Stratus messaging on SQLite, PostgreSQL or Redis, through its public client: `Messaging`, `queue().send`,
 * `sendBatch`, `consume(queue, handler, { concurrency, prefetch })`. Queues keep the defaults (duplicate
 * detection on, a 10-minute window; 30 s locks) unless a case sets the lock duration.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  type MessageBackend,
  Messaging,
  PostgresMessageBackend,
  RedisMessageBackend,
  SqliteMessageBackend,
} from '@stratus/messaging';
import type {
  BackendKind,
  ConsumeOptions,
  Driver,
  DriverSpec,
  JobData,
  OnJob,
  QueueOptions,
  QueueUnderTest,
  RunningWorker,
} from './driver.js';

/** Messages received per call in the batched mode: the same 500 as Graphile Worker's local queue there. */
export const STRATUS_BATCH = 500;

/**
 * Consumer options of a mode: prefetch 0 unbatched (each receive asks for the free handler slots only), unless
 * the case sets one.
 */
export function stratusConsumerOptions(options: ConsumeOptions): { concurrency: number; prefetch: number } {
  const batched = options.batched ? Math.max(0, STRATUS_BATCH - options.concurrency) : 0;
  return { concurrency: options.concurrency, prefetch: options.prefetch ?? batched };
}

/** A backend kept for the whole run (PostgreSQL, Redis), or one SQLite file per queue. */
type Backends = { shared: MessageBackend } | { perQueue: (name: string) => MessageBackend };

function backendsFor(kind: BackendKind, spec: DriverSpec): Backends {
  const { connection } = spec;
  switch (kind) {
    case 'sqlite': {
      const dir = required(connection.sqliteDir, 'sqliteDir');
      return { perQueue: (name) => new SqliteMessageBackend({ path: join(dir, `${name}.db`) }) };
    }
    case 'postgres':
      return {
        shared: new PostgresMessageBackend({
          connectionString: required(connection.postgresUrl, 'postgresUrl'),
        }),
      };
    case 'redis':
      return {
        shared: new RedisMessageBackend({
          url: required(connection.redisUrl, 'redisUrl'),
          keyPrefix: connection.redisPrefix === undefined ? undefined : `${connection.redisPrefix}:`,
        }),
      };
  }
}

function required(value: string | undefined, what: string): string {
  if (value === undefined) throw new Error(`stratus driver: no ${what} in the connection`);
  return value;
}

/**
 * `duplicates: false` turns duplicate detection off (`duplicateWindowMs: 0`): the guarantees of bee-queue, which has
 * none, for a row beside the default one.
 */
export function stratusDriver(kind: BackendKind, spec: DriverSpec, duplicates = true): Driver {
  const backends = backendsFor(kind, spec);
  const window = duplicates ? {} : { duplicateWindowMs: 0 };
  const shared = 'shared' in backends ? new Messaging({ backend: backends.shared }) : undefined;
  return {
    impl: spec.impl,
    backend: kind,
    description: {
      api: 'Messaging: queue().send / sendBatch, consume(queue, handler, { concurrency, prefetch })',
      queue: duplicates
        ? 'defaults: duplicate detection on (10 min window), lock 30 s, 10 deliveries'
        : 'duplicate detection off (duplicateWindowMs 0), else the defaults: lock 30 s, 10 deliveries',
      consumer: `prefetch 0 unbatched; batched: prefetch ${STRATUS_BATCH} - concurrency`,
      ...(kind === 'sqlite'
        ? { database: 'one file per queue, WAL, synchronous NORMAL, group commit (the default)' }
        : {}),
      ...(kind === 'postgres' ? { pool: 'backend default (10 connections)' } : {}),
    },
    batching: `consume with prefetch ${STRATUS_BATCH} - concurrency (receives up to ${STRATUS_BATCH} per call)`,
    redelivery: {
      how: 'queue lockDurationMs = the case lock; the lock expires, another consumer receives it',
    },
    async openQueue(name: string, options: QueueOptions = {}): Promise<QueueUnderTest> {
      const messaging =
        shared ??
        new Messaging({ backend: (backends as { perQueue: (n: string) => MessageBackend }).perQueue(name) });
      await messaging.createQueue(
        name,
        options.lockMs === undefined ? window : { ...window, lockDurationMs: options.lockMs },
      );
      const queue = messaging.queue<JobData>(name);
      return {
        async add(data) {
          await queue.send(data);
        },
        async addBulk(batch) {
          await queue.sendBatch(batch.map((body) => ({ body })));
        },
        async consume(consume: ConsumeOptions, onJob: OnJob): Promise<RunningWorker> {
          const consumer = messaging.consume<JobData>(name, (message) => onJob(message.body), {
            ...stratusConsumerOptions(consume),
            shutdownTimeoutMs: 1000,
          });
          return { stop: () => consumer.close() };
        },
        async dispose() {
          if (shared) {
            await messaging.deleteQueue(name);
            return;
          }
          await messaging.close();
          const dir = required(spec.connection.sqliteDir, 'sqliteDir');
          for (const suffix of ['', '-wal', '-shm'])
            rmSync(join(dir, `${name}.db${suffix}`), { force: true });
        },
      };
    },
    async close() {
      await shared?.close();
    },
  };
}
