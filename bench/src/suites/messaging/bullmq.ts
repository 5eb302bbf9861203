/**
 * BullMQ 6.7 on Redis: `Queue.add` / `addBulk`, `Worker` with `concurrency`, completed and failed jobs removed
 * (`removeOnComplete`, `removeOnFail`), as the anchors' measurements ran it. Each queue (and worker) opens its own
 * connections, as BullMQ does when given connection options.
 */
import { Queue, Worker } from 'bullmq';
import type {
  ConsumeOptions,
  Driver,
  DriverSpec,
  JobData,
  OnJob,
  QueueOptions,
  QueueUnderTest,
} from './driver.js';

function connectionOf(url: string) {
  const parsed = new URL(url);
  // Workers block on Redis: BullMQ requires maxRetriesPerRequest null for their connections.
  return { host: parsed.hostname, port: Number(parsed.port || 6379), maxRetriesPerRequest: null };
}

export function bullmqDriver(spec: DriverSpec): Driver {
  const { redisUrl, redisPrefix } = spec.connection;
  if (redisUrl === undefined) throw new Error('bullmq driver: no redisUrl');
  const connection = connectionOf(redisUrl);
  const prefix = redisPrefix ?? 'bull';
  return {
    impl: spec.impl,
    backend: 'redis',
    description: {
      api: 'Queue.add / addBulk; Worker(queue, processor, { concurrency })',
      jobs: 'removeOnComplete: true, removeOnFail: true',
      worker: 'defaults (lockDuration 30 s, stalledInterval 30 s) unless a case sets the lock',
    },
    redelivery: {
      how: 'Worker lockDuration and stalledInterval = the case lock: a stalled check finds the expired lock',
    },
    async openQueue(name: string, options: QueueOptions = {}): Promise<QueueUnderTest> {
      const queue = new Queue<JobData>(name, {
        connection,
        prefix,
        defaultJobOptions: { removeOnComplete: true, removeOnFail: true },
      });
      await queue.waitUntilReady();
      const lock =
        options.lockMs === undefined ? {} : { lockDuration: options.lockMs, stalledInterval: options.lockMs };
      return {
        async add(data) {
          await queue.add('job', data);
        },
        async addBulk(batch) {
          await queue.addBulk(batch.map((data) => ({ name: 'job', data })));
        },
        async consume(consume: ConsumeOptions, onJob: OnJob) {
          const worker = new Worker<JobData>(name, async (job) => onJob(job.data), {
            connection,
            prefix,
            concurrency: consume.concurrency,
            ...lock,
          });
          worker.on('error', () => {});
          await worker.waitUntilReady();
          return { stop: () => worker.close(true) };
        },
        async dispose() {
          await queue.obliterate({ force: true });
          await queue.close();
        },
      };
    },
    async close() {},
  };
}
