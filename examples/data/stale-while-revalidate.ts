// Freshness options of cache-aside: stale-while-revalidate serves the old value for a grace period past its TTL
// while one background refresh runs, so no reader waits for the loader; negative caching remembers "not found" for
// a while, so a missing key does not reach the database on every read.
// Prints:
//   fresh: v1
//   stale, served at once: v1
//   refreshed in the background: v2
//   missing user, loader calls: 1 for 3 reads
import { sleep, systemClock } from '@stratus/core';
import { cacheAside } from '@stratus/data';

let version = 1;
const cache = cacheAside({ ttlMs: 30, staleWhileRevalidateMs: 1_000 });
const load = async () => `v${version}`;

console.log(`fresh: ${await cache.getOrLoad('config', load)}`);
version = 2;
await sleep(systemClock, 40); // past the TTL, within the grace period
console.log(`stale, served at once: ${await cache.getOrLoad('config', load)}`);
await sleep(systemClock, 10); // the background refresh has landed
console.log(`refreshed in the background: ${await cache.getOrLoad('config', load)}`);

let lookups = 0;
const findUser = async () => {
  lookups++;
  return null; // not found
};
for (let i = 0; i < 3; i++) await cache.getOrLoad('user:ghost', findUser, { negativeTtlMs: 5_000 });
console.log(`missing user, loader calls: ${lookups} for 3 reads`);
cache.close();
