/**
 * Graphile Worker 0.18 on PostgreSQL: `addJob` / `addJobs` through WorkerUtils, `run({ concurrency, taskList })`.
 * Unbatched: its defaults (each worker fetches and completes its own job). Batched: the settings of its
 * published high-throughput run, `localQueue: { size: 500 }` and batch delays 0.
 */
import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker';
import type { ConsumeOptions, Driver, DriverSpec, JobData, OnJob, QueueUnderTest } from './driver.js';

const LOCAL_QUEUE_SIZE = 500;
const silent = new Logger(() => () => {});

export function graphileWorkerDriver(spec: DriverSpec): Driver {
  const { postgresUrl } = spec.connection;
  if (postgresUrl === undefined) throw new Error('graphile-worker driver: no postgresUrl');
  let utils: Promise<WorkerUtils> | undefined;
  const workerUtils = () => {
    utils ??= makeWorkerUtils({ connectionString: postgresUrl, logger: silent });
    return utils;
  };
  return {
    impl: spec.impl,
    backend: 'postgres',
    description: {
      api: 'WorkerUtils.addJob / addJobs; run({ concurrency, taskList })',
      worker: `defaults unbatched; batched: localQueue { size: ${LOCAL_QUEUE_SIZE} }, completeJobBatchDelay 0, failJobBatchDelay 0`,
      pool: 'its own pools: producer (WorkerUtils) 10 connections, worker maxPoolSize concurrency + 2',
    },
    batching: `localQueue size ${LOCAL_QUEUE_SIZE}, completeJobBatchDelay 0, failJobBatchDelay 0`,
    redelivery: {
      skip: "a crashed worker's jobs stay locked for 4 hours (fixed in 0.18, not configurable); not measured",
    },
    async openQueue(name: string): Promise<QueueUnderTest> {
      const utils = await workerUtils();
      await utils.migrate();
      return {
        async add(data) {
          await utils.addJob(name, data);
        },
        async addBulk(batch) {
          await utils.addJobs(batch.map((payload) => ({ identifier: name, payload })));
        },
        async consume(consume: ConsumeOptions, onJob: OnJob) {
          const runner = await run({
            connectionString: postgresUrl,
            maxPoolSize: consume.concurrency + 2,
            concurrency: consume.concurrency,
            noHandleSignals: true,
            logger: silent,
            taskList: { [name]: async (payload) => onJob(payload as JobData) },
            ...(consume.batched
              ? {
                  preset: {
                    worker: {
                      localQueue: { size: LOCAL_QUEUE_SIZE },
                      completeJobBatchDelay: 0,
                      failJobBatchDelay: 0,
                    },
                  },
                }
              : {}),
          });
          return { stop: () => runner.stop() };
        },
        async dispose() {
          // Completed jobs are deleted by Graphile Worker itself; added but unprocessed ones are not.
          await utils.withPgClient((client) =>
            client.query(
              `DELETE FROM graphile_worker._private_jobs
                WHERE task_id IN (SELECT id FROM graphile_worker._private_tasks WHERE identifier = $1)`,
              [name],
            ),
          );
        },
      };
    },
    async close() {
      if (utils !== undefined) await (await utils).release();
    },
  };
}
