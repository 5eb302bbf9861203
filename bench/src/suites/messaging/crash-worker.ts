/**
 * A worker process for the redelivery case: `crash-worker.ts '<json: { spec, queue, lockMs }>'` opens the queue
 * with the implementation's normal worker, prints `{"ready":true}`, and on its first job prints
 * `{"started":true}` and never finishes it: the parent then kills it with SIGKILL while it holds the job.
 */
import type { DriverSpec } from './driver.js';
import { createDriver } from './implementations.js';

interface CrashWorkerArgs {
  readonly spec: DriverSpec;
  readonly queue: string;
  readonly lockMs: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as CrashWorkerArgs;
const driver = createDriver(args.spec);
const queue = await driver.openQueue(args.queue, { lockMs: args.lockMs });
await queue.consume({ concurrency: 1, batched: false }, () => {
  console.log(JSON.stringify({ started: true }));
  return new Promise<void>(() => {});
});
// Held open until the parent kills it, whatever the implementation leaves on the event loop.
setInterval(() => {}, 60_000);
console.log(JSON.stringify({ ready: true }));
