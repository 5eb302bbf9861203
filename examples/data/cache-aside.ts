// Cache-aside: read a key from the cache, else load it from the system of record and keep it for its TTL. A writer
// changes the system of record first and only then invalidates the key, so no reader caches the old value.
// Prints:
//   first read: 100 (loaded)
//   second read: 100 (cached)
//   after the write: 120 (loaded)
//   after the TTL: 120 (loaded)
//   loads 3, hits 1
import { sleep, systemClock } from '@stratus/core';
import { cacheAside, MemoryCacheStore } from '@stratus/data';

const prices = new Map([['sku-1', 100]]); // the system of record

// A local LRU in front of a shared store; a RedisCacheStore shares entries and invalidations across processes.
const cache = cacheAside({ store: new MemoryCacheStore(), local: { maxEntries: 10_000 }, ttlMs: 50 });

async function read(): Promise<string> {
  const loadsBefore = cache.stats.loads;
  const price = await cache.getOrLoad('price:sku-1', async () => prices.get('sku-1'));
  return `${price} (${cache.stats.loads > loadsBefore ? 'loaded' : 'cached'})`;
}

console.log(`first read: ${await read()}`);
console.log(`second read: ${await read()}`);
await cache.invalidateAfter(async () => prices.set('sku-1', 120), 'price:sku-1');
console.log(`after the write: ${await read()}`);
await sleep(systemClock, 80); // past the 50 ms TTL
console.log(`after the TTL: ${await read()}`);
console.log(`loads ${cache.stats.loads}, hits ${cache.stats.hits}`);
cache.close();
