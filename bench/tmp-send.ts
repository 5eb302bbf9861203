import { Messaging, RedisMessageBackend } from '@stratus/messaging';
import BeeQueue from 'bee-queue';

const which = process.argv[2] ?? 'stratus';
const N = Number(process.argv[3] ?? 20000);
const url = 'redis://127.0.0.1:56379';
const data = { payload: 'x'.repeat(1000), n: 1 };
let add: (d: unknown) => Promise<unknown>;
let close: () => Promise<unknown>;
if (which === 'bee') {
  const q = new BeeQueue('tmpbee', {
    redis: { host: '127.0.0.1', port: 56379 },
    isWorker: false,
    getEvents: false,
    sendEvents: false,
    storeJobs: false,
  });
  await q.ready();
  add = (d) => q.createJob(d).save();
  close = async () => {
    await q.destroy();
    await q.close();
  };
} else {
  const backend = new RedisMessageBackend({ url });
  const m = new Messaging({ backend });
  await m.createQueue('tmps', which === 'nodup' ? { duplicateWindowMs: 0 } : {});
  const q = m.queue('tmps');
  add = (d) => q.send(d);
  close = async () => {
    await m.deleteQueue('tmps');
    await backend.close();
  };
}
for (let i = 0; i < 3000; i++) await add(data);
for (let r = 0; r < 3; r++) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await add(data);
  const t = performance.now() - t0;
  const c = process.cpuUsage(c0);
  console.log(which, 'us/op', ((t * 1000) / N).toFixed(1), 'cpu us/op', ((c.user + c.system) / N).toFixed(1));
}
await close();
