/**
 * pg-boss 12.27 on PostgreSQL: `send`, `insert` (bulk), `work` with a batch size. Its worker fetches `batchSize`
 * jobs per poll and waits out the polling interval (at least 0.5 s) after a fetch unless the fetch was full and
 * `burstWhenBatchFull` is set: so concurrency 1 is batch size 1 (poll-bound, as the anchors found), concurrency
 * 50 is a batch of 50 with burst, batched is a batch of 500 with burst. Queues are created with `notify` and the
 * instance with `useListenNotify`, so an idle worker wakes on NOTIFY instead of its poll.
 */
import { PgBoss, type WorkOptions } from 'pg-boss';
import type {
  ConsumeOptions,
  Driver,
  DriverSpec,
  JobData,
  OnJob,
  QueueOptions,
  QueueUnderTest,
} from './driver.js';

/** pg-boss's smallest polling interval. */
const POLLING_SECONDS = 0.5;
const BATCHED_SIZE = 500;

function workOptions(options: ConsumeOptions): WorkOptions {
  const polling = { pollingIntervalSeconds: POLLING_SECONDS, notifyPollingIntervalSeconds: POLLING_SECONDS };
  if (options.batched) return { ...polling, batchSize: BATCHED_SIZE, burstWhenBatchFull: true };
  if (options.concurrency === 1) return { ...polling, batchSize: 1 };
  return { ...polling, batchSize: options.concurrency, burstWhenBatchFull: true };
}

export function pgBossDriver(spec: DriverSpec): Driver {
  const { postgresUrl } = spec.connection;
  if (postgresUrl === undefined) throw new Error('pg-boss driver: no postgresUrl');
  return {
    impl: spec.impl,
    backend: 'postgres',
    description: {
      api: 'send, insert(jobs), work(queue, { batchSize, burstWhenBatchFull }, handler)',
      worker:
        `pollingIntervalSeconds ${POLLING_SECONDS} (the minimum); concurrency 1 = batchSize 1, ` +
        `concurrency 50 = batchSize 50 + burstWhenBatchFull, batched = batchSize ${BATCHED_SIZE} + burst`,
      queue:
        'notify: true with useListenNotify; defaults otherwise (completed jobs kept 7 days, retryLimit 2)',
      pool: 'pg-boss default (10 connections)',
    },
    batching: `work with batchSize ${BATCHED_SIZE} and burstWhenBatchFull`,
    redelivery: {
      how:
        'queue expireInSeconds, superviseIntervalSeconds and monitorIntervalSeconds = the case lock: the ' +
        'supervisor fails the expired job for a retry',
    },
    async openQueue(name: string, options: QueueOptions = {}): Promise<QueueUnderTest> {
      const lockSeconds =
        options.lockMs === undefined ? undefined : Math.max(1, Math.round(options.lockMs / 1000));
      const boss = new PgBoss({
        connectionString: postgresUrl,
        useListenNotify: true,
        schedule: false,
        // Expiry runs in the supervisor's monitor step, at most every monitorIntervalSeconds (default 60).
        ...(lockSeconds === undefined
          ? {}
          : { superviseIntervalSeconds: lockSeconds, monitorIntervalSeconds: lockSeconds }),
      });
      boss.on('error', () => {});
      await boss.start();
      await boss.createQueue(name, {
        notify: true,
        ...(lockSeconds === undefined ? {} : { expireInSeconds: lockSeconds }),
      });
      return {
        async add(data) {
          await boss.send(name, data);
        },
        async addBulk(batch) {
          await boss.insert(
            name,
            batch.map((data) => ({ data })),
          );
        },
        async consume(consume: ConsumeOptions, onJob: OnJob) {
          const id = await boss.work<JobData>(name, workOptions(consume), async (jobs) => {
            await Promise.all(jobs.map((job) => onJob(job.data)));
          });
          // Waits for the batch in hand to settle: a job still held at stop() would be failed on a deleted queue.
          return { stop: () => boss.offWork(name, { id, wait: true }) };
        },
        async dispose() {
          await boss.deleteQueue(name);
          await boss.stop({ graceful: false, timeout: 1000 });
        },
      };
    },
    async close() {},
  };
}
