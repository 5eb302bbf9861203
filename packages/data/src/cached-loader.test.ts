import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { cacheAside } from './cache.js';
import { cachedLoader } from './cached-loader.js';
import { MemoryCacheStore } from './memory-store.js';

describe('cachedLoader', () => {
  const products = new Map<number, { id: number; price: number }>([[1, { id: 1, price: 10 }]]);
  const setup = () => {
    const clock = new VirtualClock();
    const cache = cacheAside({ clock, store: new MemoryCacheStore({ clock }) });
    let reads = 0;
    const product = cachedLoader(cache, {
      key: (id: number) => `product:${id}`,
      load: (id: number) => {
        reads++;
        return products.get(id);
      },
      ttlMs: 1_000,
    });
    return { clock, cache, product, reads: () => reads };
  };

  it('reads through the cache with the per-loader TTL', async () => {
    const { clock, product, reads } = setup();
    assert.deepEqual(await product.get(1), { id: 1, price: 10 });
    await product.get(1);
    assert.equal(reads(), 1);
    await clock.advance(1_000);
    await product.get(1);
    assert.equal(reads(), 2);
    assert.equal(product.keyOf(1), 'product:1');
  });

  it('invalidates the same key the reads fill, after the write', async () => {
    const { product, cache } = setup();
    await product.get(1);
    await product.invalidateAfter(() => {
      products.set(1, { id: 1, price: 12 });
    }, 1);
    assert.deepEqual(await product.get(1), { id: 1, price: 12 });
    await product.invalidate(1);
    assert.equal(await cache.get('product:1'), undefined);
  });

  it('rejects bad options and keys that are not strings', () => {
    const { cache } = setup();
    assert.throws(() => cachedLoader(cache, { key: 'x' as never, load: () => 1 }), InvalidOptionsError);
    assert.throws(() => cachedLoader(cache, { key: () => 'k', load: () => 1, ttlMs: -1 }), /ttlMs/);
    const bad = cachedLoader(cache, { key: () => 5 as never, load: () => 1 });
    assert.throws(() => bad.keyOf(), /must return a string/);
  });
});
