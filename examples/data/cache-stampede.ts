// Stampede protection: concurrent misses of one key share a single load in a process, and with `distributedLock`
// across every instance sharing a store: one instance loads, the others wait for its value. Here two caches on one
// MemoryCacheStore stand for two processes on one Redis (RedisCacheStore).
// Prints:
//   100 concurrent reads in one instance: 1 load
//   2 instances x 50 concurrent reads: 1 load
//   the other instance waited for that load: 1 lock wait, 0 loads of its own
import { sleep, systemClock } from '@stratus/core';
import { type CacheAside, cacheAside, MemoryCacheStore } from '@stratus/data';

let loads = 0;
const slowReport = async () => {
  loads++;
  await sleep(systemClock, 20); // an expensive query
  return { orders: 1_234 };
};
const readMany = (cache: CacheAside, n: number) =>
  Array.from({ length: n }, () => cache.getOrLoad('report:daily', slowReport));

const single = cacheAside();
await Promise.all(readMany(single, 100));
console.log(`100 concurrent reads in one instance: ${loads} load`);

loads = 0;
const store = new MemoryCacheStore();
const a = cacheAside({ store, distributedLock: { ttlMs: 10_000 } }); // in process 1
const b = cacheAside({ store, distributedLock: { ttlMs: 10_000 } }); // in process 2
const first = readMany(a, 50);
await sleep(systemClock, 5); // instance a holds the load lock by now
await Promise.all([...first, ...readMany(b, 50)]);
console.log(`2 instances x 50 concurrent reads: ${loads} load`);
console.log(
  `the other instance waited for that load: ${b.stats.lockWaits} lock wait, ${b.stats.loads} loads of its own`,
);
for (const cache of [single, a, b]) cache.close();
