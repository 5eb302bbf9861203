// A cached loader: one read method of a data source wrapped in cache-aside, with the key function shared by the read
// and the invalidation paths, so a writer can never invalidate a key other than the one readers fill.
// Prints:
//   product:7 -> Desk lamp
//   product:7 -> Desk lamp (no second query)
//   after the rename -> Reading lamp
//   queries: 2
import { cacheAside, cachedLoader } from '@stratus/data';

const products = new Map([[7, { name: 'Desk lamp' }]]); // the system of record
let queries = 0;

const productById = cachedLoader(cacheAside(), {
  key: (id: number) => `product:${id}`,
  load: async (id: number) => {
    queries++;
    return products.get(id);
  },
  ttlMs: 60_000,
});

console.log(`${productById.keyOf(7)} -> ${(await productById.get(7))?.name}`);
console.log(`${productById.keyOf(7)} -> ${(await productById.get(7))?.name} (no second query)`);
await productById.invalidateAfter(async () => products.set(7, { name: 'Reading lamp' }), 7);
console.log(`after the rename -> ${(await productById.get(7))?.name}`);
console.log(`queries: ${queries}`);
