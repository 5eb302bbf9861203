/**
 * plainjob 0.0.14 on SQLite (better-sqlite3; plainjob sets WAL and synchronous NORMAL itself): `add`, `addMany`,
 * `defineWorker` (one job at a time per worker, polling every second when idle: its default). Concurrency N is
 * N workers in this process. A fresh database file per queue, as for Stratus on SQLite.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { better, defineQueue, defineWorker, type Logger } from 'plainjob';
import type {
  ConsumeOptions,
  Driver,
  DriverSpec,
  JobData,
  OnJob,
  QueueOptions,
  QueueUnderTest,
} from './driver.js';

const ignore = () => {};
const silent: Logger = { error: ignore, warn: ignore, info: ignore, debug: ignore };

export function plainjobDriver(spec: DriverSpec): Driver {
  const dir = spec.connection.sqliteDir;
  if (dir === undefined) throw new Error('plainjob driver: no sqliteDir');
  return {
    impl: spec.impl,
    backend: 'sqlite',
    description: {
      api: 'queue.add / addMany, defineWorker(type, processor, { queue }) x concurrency',
      database: 'one file per queue, better-sqlite3, WAL, synchronous NORMAL (set by plainjob)',
      worker: 'defaults (poll every 1000 ms when idle); done jobs kept (its default: 7 days)',
    },
    redelivery: {
      how: 'queue timeout and maintenanceInterval = the case lock: maintenance requeues the timed-out job',
    },
    async openQueue(name: string, options: QueueOptions = {}): Promise<QueueUnderTest> {
      const path = join(dir, `${name}.db`);
      const database = new Database(path);
      const queue = defineQueue({
        connection: better(database),
        logger: silent,
        ...(options.lockMs === undefined
          ? {}
          : { timeout: options.lockMs, maintenanceInterval: options.lockMs }),
      });
      return {
        async add(data) {
          queue.add(name, data);
        },
        async addBulk(batch) {
          queue.addMany(name, [...batch]);
        },
        async consume(consume: ConsumeOptions, onJob: OnJob) {
          const workers = Array.from({ length: consume.concurrency }, () =>
            defineWorker(name, (job) => onJob(JSON.parse(job.data) as JobData), { queue, logger: silent }),
          );
          // start() resolves once its loop has left (after stop(), when the job in hand is done).
          const loops = workers.map((worker) => worker.start());
          return {
            async stop() {
              await Promise.all(workers.map((worker) => worker.stop()));
              await Promise.all(loops);
            },
          };
        },
        async dispose() {
          queue.close();
          database.close();
          for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
        },
      };
    },
    async close() {},
  };
}
