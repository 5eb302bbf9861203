/**
 * bee-queue 2.0 on Redis: `createJob(data).save()`, `saveAll`, `process(concurrency, handler)`, with successful
 * jobs removed and events off (`getEvents`, `sendEvents`, `storeJobs` false: its own benchmark's settings).
 */
import BeeQueue from 'bee-queue';
import type {
  ConsumeOptions,
  Driver,
  DriverSpec,
  JobData,
  OnJob,
  QueueOptions,
  QueueUnderTest,
} from './driver.js';

/** bee-queue's default stall interval, which is also the lock the redelivery case uses elsewhere. */
const DEFAULT_STALL_INTERVAL_MS = 5000;

export function beeQueueDriver(spec: DriverSpec): Driver {
  const { redisUrl, redisPrefix } = spec.connection;
  if (redisUrl === undefined) throw new Error('bee-queue driver: no redisUrl');
  const parsed = new URL(redisUrl);
  const redis = { host: parsed.hostname, port: Number(parsed.port || 6379) };
  const settings = {
    redis,
    prefix: redisPrefix ?? 'bq',
    getEvents: false,
    sendEvents: false,
    storeJobs: false,
    removeOnSuccess: true,
    removeOnFailure: true,
  };
  return {
    impl: spec.impl,
    backend: 'redis',
    description: {
      api: 'createJob(data).save(), saveAll(jobs), process(concurrency, handler)',
      settings: 'getEvents, sendEvents, storeJobs false; removeOnSuccess, removeOnFailure true',
    },
    redelivery: {
      how:
        `stallInterval = the case lock (its default is ${DEFAULT_STALL_INTERVAL_MS} ms); the surviving ` +
        'worker calls checkStalledJobs(stallInterval), as its README asks',
    },
    async openQueue(name: string, options: QueueOptions = {}): Promise<QueueUnderTest> {
      const stallInterval = options.lockMs ?? DEFAULT_STALL_INTERVAL_MS;
      const producer = new BeeQueue<JobData>(name, { ...settings, isWorker: false, stallInterval });
      producer.on('error', () => {});
      await producer.ready();
      return {
        async add(data) {
          await producer.createJob(data).save();
        },
        async addBulk(batch) {
          const failed = await producer.saveAll(batch.map((data) => producer.createJob(data)));
          if (failed.size > 0) throw new Error(`bee-queue: ${failed.size} jobs of a batch were not saved`);
        },
        async consume(consume: ConsumeOptions, onJob: OnJob) {
          const worker = new BeeQueue<JobData>(name, { ...settings, isWorker: true, stallInterval });
          worker.on('error', () => {});
          await worker.ready();
          worker.process(consume.concurrency, async (job: BeeQueue.Job<JobData>) => onJob(job.data));
          if (options.lockMs !== undefined) void worker.checkStalledJobs(stallInterval).catch(() => {});
          return { stop: () => worker.close(1000) };
        },
        async dispose() {
          await producer.destroy();
          await producer.close();
        },
      };
    },
    async close() {},
  };
}
