import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { circuitBreaker } from '@stratus/resilience';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { type CacheAside, cacheAside } from './cache.js';
import type { CacheEvent } from './events.js';
import { FlakyStore } from './fixtures/flaky-store.js';
import { MemoryCacheStore } from './memory-store.js';
import type { CacheAsideOptions } from './options.js';

/** A promise settled by hand, to hold a loader (or a write) at a chosen point. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const opened = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A loader that counts its calls and returns the current value of a pretend database row. */
function rowLoader(db: { value: unknown }) {
  const loader = () => {
    loader.calls++;
    return db.value;
  };
  loader.calls = 0;
  return loader;
}

function setup(options: CacheAsideOptions = {}) {
  const clock = new VirtualClock();
  const cache = cacheAside({ clock, ...options });
  const events: CacheEvent[] = [];
  cache.events.on((event) => events.push(event));
  const types = () => events.map((e) => e.type);
  return { clock, cache, events, types };
}

describe('cacheAside options', () => {
  it('rejects bad options with InvalidOptionsError naming the option', () => {
    const bad: [CacheAsideOptions, RegExp][] = [
      [{ ttlMs: 0 }, /"ttlMs"/],
      [{ ttlMs: -1 }, /"ttlMs"/],
      [{ negativeTtlMs: Number.NaN }, /"negativeTtlMs"/],
      [{ staleWhileRevalidateMs: -5 }, /"staleWhileRevalidateMs"/],
      [{ local: { maxEntries: 0 } }, /"local.maxEntries"/],
      [{ local: { maxEntries: 1.5 } }, /"local.maxEntries"/],
      [{ local: { maxTtlMs: 0 } }, /"local.maxTtlMs"/],
      [{ distributedLock: true }, /"distributedLock"/],
      [{ store: new MemoryCacheStore(), distributedLock: { ttlMs: 0 } }, /"distributedLock.ttlMs"/],
      [{ store: new MemoryCacheStore(), distributedLock: { pollMs: -1 } }, /"distributedLock.pollMs"/],
      [{ store: {} as never }, /"store"/],
      [{ storeTimeoutMs: -1 }, /"storeTimeoutMs"/],
      [{ name: '' }, /"name"/],
      [{ clock: {} as never }, /"clock"/],
    ];
    for (const [options, message] of bad) {
      assert.throws(() => cacheAside(options), InvalidOptionsError);
      assert.throws(() => cacheAside(options), message);
    }
  });

  it('rejects bad per-call options, keys and loaders, on hits as on misses', async () => {
    const { cache } = setup();
    await cache.getOrLoad('k', () => 1);
    assert.throws(() => cache.getOrLoad('k', () => 1, { ttlMs: -1 }), /"options.ttlMs"/);
    assert.throws(() => cache.getOrLoad('other', () => 1, { ttlMs: 0 }), /"options.ttlMs"/);
    assert.throws(() => cache.getOrLoad(5 as never, () => 1), /"key"/);
    assert.throws(() => cache.getOrLoad('missing', 'nope' as never), /"loader"/);
    await assert.rejects(cache.set('k', 1, { negativeTtlMs: -1 }), /"options.negativeTtlMs"/);
    await assert.rejects(cache.delete([1] as never), /"keys"/);
    await assert.rejects(cache.invalidateAfter('x' as never, 'k'), /"write"/);
  });
});

describe('cacheAside reads', () => {
  it('loads a miss once and keeps it; a hit reads nothing from the loader', async () => {
    const { cache, types } = setup();
    const load = rowLoader({ value: { id: 1 } });
    assert.deepEqual(await cache.getOrLoad('user:1', load), { id: 1 });
    assert.deepEqual(await cache.getOrLoad('user:1', load), { id: 1 });
    assert.equal(load.calls, 1);
    assert.deepEqual(types(), ['miss', 'load', 'hit']);
    const stats = cache.stats;
    assert.deepEqual([stats.hits, stats.localHits, stats.misses, stats.loads], [1, 1, 1, 1]);
    assert.equal(await cache.get('user:1').then((v) => (v as { id: number }).id), 1);
  });

  it('expires each item after its own TTL, and after the default 3 minutes', async () => {
    const { cache, clock } = setup();
    const db = { value: 'v1' };
    const load = rowLoader(db);
    await cache.getOrLoad('short', load, { ttlMs: 1_000 });
    await cache.getOrLoad('default', load);
    db.value = 'v2';
    await clock.advance(999);
    assert.equal(await cache.getOrLoad('short', load), 'v1');
    await clock.advance(1);
    assert.equal(await cache.getOrLoad('short', load, { ttlMs: 1_000 }), 'v2', 'reloaded at its TTL');
    assert.equal(await cache.getOrLoad('default', load), 'v1');
    await clock.advance(180_000 - 1_000);
    assert.equal(await cache.getOrLoad('default', load), 'v2', 'reloaded after 3 minutes');
    assert.equal(load.calls, 4);
  });

  it('never caches undefined or null unless asked, then for negativeTtlMs', async () => {
    const { cache, clock } = setup();
    for (const missing of [undefined, null]) {
      const load = rowLoader({ value: missing });
      assert.equal(await cache.getOrLoad(`none-${missing}`, load), missing);
      assert.equal(await cache.getOrLoad(`none-${missing}`, load), missing);
      assert.equal(load.calls, 2, 'every call asks the loader again');
    }
    const load = rowLoader({ value: null });
    assert.equal(await cache.getOrLoad('neg', load, { negativeTtlMs: 500 }), null);
    assert.equal(await cache.getOrLoad('neg', load), null);
    assert.equal(load.calls, 1, 'the miss is remembered');
    await clock.advance(500);
    await cache.getOrLoad('neg', load);
    assert.equal(load.calls, 2, 'for its own TTL only');
  });

  it('shares one load among concurrent misses of a key', async () => {
    const { cache } = setup();
    const held = gate<string>();
    let calls = 0;
    const loader = () => {
      calls++;
      return held.opened;
    };
    const all = Array.from({ length: 100 }, () => cache.getOrLoad('k', loader));
    const other = cache.getOrLoad('other', () => 'o');
    held.open('value');
    assert.deepEqual(new Set(await Promise.all(all)), new Set(['value']));
    assert.equal(await other, 'o');
    assert.equal(calls, 1);
    assert.equal(cache.stats.coalesced, 99);
  });

  it('gives every waiter the loader error, caches nothing, and loads again next time', async () => {
    const { cache, types } = setup();
    let calls = 0;
    const failing = async () => {
      calls++;
      throw new Error('db down');
    };
    const results = await Promise.allSettled([cache.getOrLoad('k', failing), cache.getOrLoad('k', failing)]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    assert.equal(calls, 1);
    assert.equal(await cache.getOrLoad('k', () => 'ok'), 'ok');
    assert.ok(types().includes('load-error'));
    assert.equal(cache.stats.loadErrors, 1);
  });

  it('bounds the local tier by entry count, evicting the least recently used', async () => {
    const { cache } = setup({ local: { maxEntries: 2 } });
    const load = rowLoader({ value: 1 });
    await cache.getOrLoad('a', load);
    await cache.getOrLoad('b', load);
    await cache.getOrLoad('a', load);
    await cache.getOrLoad('c', load);
    assert.equal(cache.stats.localEntries, 2);
    await cache.getOrLoad('a', load);
    assert.equal(load.calls, 3, 'a stayed');
    await cache.getOrLoad('b', load);
    assert.equal(load.calls, 4, 'b was evicted');
  });

  it('serves stale within the grace window while one background refresh runs', async () => {
    const { cache, clock, events } = setup({ staleWhileRevalidateMs: 5_000 });
    const db = { value: 'old' };
    const refreshed = gate();
    let calls = 0;
    const loader = async () => {
      calls++;
      if (calls > 1) await refreshed.opened;
      return db.value;
    };
    await cache.getOrLoad('k', loader, { ttlMs: 1_000 });
    db.value = 'new';
    await clock.advance(1_500);
    const served = await Promise.all([1, 2, 3].map(() => cache.getOrLoad('k', loader, { ttlMs: 1_000 })));
    assert.deepEqual(served, ['old', 'old', 'old'], 'stale values at once');
    assert.equal(calls, 2, 'one refresh');
    refreshed.open();
    await flushMicrotasks();
    assert.equal(await cache.getOrLoad('k', loader), 'new');
    assert.ok(events.some((e) => e.type === 'load' && e.background));
    assert.equal(cache.stats.staleHits, 3);
    await clock.advance(1_000 + 5_000);
    assert.equal(await cache.getOrLoad('k', loader), 'new');
    assert.equal(calls, 3, 'past the grace window a read waits for the loader');
  });

  it('keeps serving stale when the background refresh fails, and reports it', async () => {
    const { cache, clock, events } = setup({ ttlMs: 1_000, staleWhileRevalidateMs: 5_000 });
    await cache.getOrLoad('k', () => 'old');
    await clock.advance(1_500);
    assert.equal(await cache.getOrLoad('k', () => Promise.reject(new Error('refresh failed'))), 'old');
    await flushMicrotasks();
    assert.ok(events.some((e) => e.type === 'load-error' && e.background));
    assert.equal(await cache.getOrLoad('k', () => 'unused'), 'old');
  });

  it('caps the life of local entries with local.maxTtlMs', async () => {
    const { cache, clock } = setup({ local: { maxTtlMs: 100 } });
    const load = rowLoader({ value: 1 });
    await cache.getOrLoad('k', load, { ttlMs: 60_000 });
    await clock.advance(100);
    await cache.getOrLoad('k', load);
    assert.equal(load.calls, 2);
  });
});

describe('cacheAside writes', () => {
  it('invalidates only after the write to the system of record completed', async () => {
    const store = new FlakyStore();
    const { cache } = setup({ store });
    const log: string[] = [];
    const db = { value: 1 };
    await cache.getOrLoad('k', rowLoader(db));
    store.calls.length = 0;
    const result = await cache.invalidateAfter(async () => {
      await flushMicrotasks();
      db.value = 2;
      log.push(`write (store calls so far: ${store.calls.length})`);
      return 'written';
    }, 'k');
    log.push(...store.calls);
    assert.equal(result, 'written');
    assert.deepEqual(log, ['write (store calls so far: 0)', 'delete k']);
    assert.equal(await cache.getOrLoad('k', rowLoader(db)), 2);
  });

  it('still invalidates when the write throws, and rethrows its error', async () => {
    const { cache } = setup();
    await cache.getOrLoad('k', () => 1);
    await assert.rejects(
      cache.invalidateAfter(() => {
        throw new Error('constraint violated');
      }, ['k']),
      /constraint violated/,
    );
    assert.equal(await cache.getOrLoad('k', () => 2), 2);
  });

  it('never ends up holding the old value once the write completed, with a reader between the steps', async () => {
    for (const store of [undefined, new MemoryCacheStore()]) {
      const { cache } = setup({ store });
      const db = { value: 'old' };
      await cache.getOrLoad('k', rowLoader(db));
      let between: unknown;
      await cache.invalidateAfter(async () => {
        db.value = 'new';
        between = await cache.getOrLoad('k', rowLoader(db)); // reads between the write and the invalidation
      }, 'k');
      assert.equal(between, 'old');
      assert.equal(await cache.getOrLoad('k', rowLoader(db)), 'new');
    }
  });

  it('does not cache a value loaded before a write that finished while the load ran', async () => {
    for (const store of [undefined, new MemoryCacheStore()]) {
      const { cache } = setup({ store, distributedLock: store !== undefined });
      const db = { value: 'old' };
      const slow = gate();
      // The reader reads the row, then stalls before its result reaches the cache.
      const reader = cache.getOrLoad('k', async () => {
        const read = db.value;
        await slow.opened;
        return read;
      });
      await flushMicrotasks();
      await cache.invalidateAfter(() => {
        db.value = 'new';
      }, 'k');
      const during = cache.getOrLoad('k', rowLoader(db));
      slow.open();
      assert.equal(await reader, 'old', 'the early reader gets what it read');
      assert.equal(await during, 'new', 'a read after the write does not join the stale load');
      assert.equal(await cache.getOrLoad('k', rowLoader(db)), 'new', 'the stale value was not cached');
      if (store) assert.equal((await store.get('k', Date.UTC(2026, 0, 1)))?.value, 'new');
    }
  });

  it('set primes both tiers; setting undefined deletes', async () => {
    const store = new MemoryCacheStore();
    const { cache } = setup({ store });
    await cache.set('k', 'primed', { ttlMs: 1_000 });
    assert.equal(await cache.getOrLoad('k', () => 'loaded'), 'primed');
    assert.equal((await store.get('k', Date.UTC(2026, 0, 1)))?.value, 'primed');
    await cache.set('k', undefined);
    assert.equal(await cache.get('k'), undefined);
    assert.equal(await store.get('k', Date.UTC(2026, 0, 1)), undefined);
  });
});

describe('cacheAside with a shared store', () => {
  const twoInstances = (options: CacheAsideOptions = {}) => {
    const clock = new VirtualClock();
    const store = new MemoryCacheStore({ clock });
    const a = cacheAside({ clock, store, name: 'a', ...options });
    const b = cacheAside({ clock, store, name: 'b', ...options });
    return { clock, store, a, b };
  };

  it('serves another instance from the store without loading', async () => {
    const { a, b } = twoInstances();
    const load = rowLoader({ value: 'v' });
    await a.getOrLoad('k', load);
    assert.equal(await b.getOrLoad('k', load), 'v');
    assert.equal(load.calls, 1);
    assert.equal(b.stats.storeHits, 1);
    assert.equal(await b.getOrLoad('k', load), 'v');
    assert.equal(b.stats.localHits, 1, 'then from its own local tier');
  });

  it("evicts a key from every other instance's local tier when one instance sets or deletes it", async () => {
    const { a, b } = twoInstances();
    const db = { value: 'v1' };
    await a.getOrLoad('k', rowLoader(db));
    await b.getOrLoad('k', rowLoader(db));
    const seen: CacheEvent[] = [];
    b.events.on((e) => seen.push(e));
    db.value = 'v2';
    await a.invalidateAfter(() => {}, 'k');
    assert.equal(b.stats.localEntries, 0, 'evicted from b');
    assert.deepEqual(
      seen.map((e) => e.type),
      ['remote-invalidation'],
    );
    assert.equal(await b.getOrLoad('k', rowLoader(db)), 'v2');
    await a.set('k', 'v3');
    assert.equal(await b.getOrLoad('k', rowLoader(db)), 'v3', 'b dropped v2 and read the store');
    assert.equal(b.stats.remoteInvalidations, 2);
  });

  it('loads once across instances with distributedLock; waiters get the holder value', async () => {
    const { a, b } = twoInstances({ distributedLock: true });
    const held = gate();
    let calls = 0;
    const loader = async () => {
      calls++;
      await held.opened;
      return 'shared';
    };
    const fromA = a.getOrLoad('k', loader);
    await flushMicrotasks();
    const waits = b.events.once((e) => e.type === 'lock-wait');
    const fromB = Promise.all(Array.from({ length: 10 }, () => b.getOrLoad('k', loader)));
    await waits;
    held.open();
    assert.equal(await fromA, 'shared');
    assert.deepEqual(new Set(await fromB), new Set(['shared']));
    assert.equal(calls, 1);
    assert.equal(b.stats.loads, 0);
  });

  it('loads itself once the holder of the lock died and its lock lapsed', async () => {
    const { a, clock, store } = twoInstances({ distributedLock: { ttlMs: 1_000, pollMs: 100 } });
    assert.ok(await store.tryLock('k', 1_000), 'a "process" takes the lock and dies');
    let loaded = false;
    const result = a
      .getOrLoad('k', () => 'mine')
      .then((v) => {
        loaded = true;
        return v;
      });
    await clock.advance(900);
    assert.equal(loaded, false, 'waits while the lock holds');
    await clock.advance(200);
    assert.equal(await result, 'mine');
    assert.equal(a.stats.lockWaits, 1);
  });

  it('renews the lock while a slow load runs, so other instances keep waiting for it', async () => {
    const { a, b, clock } = twoInstances({ distributedLock: { ttlMs: 1_000, pollMs: 100 } });
    const held = gate();
    let calls = 0;
    const slow = async () => {
      calls++;
      await held.opened;
      return 'slow but alive';
    };
    const fromA = a.getOrLoad('k', slow);
    await flushMicrotasks();
    const fromB = b.getOrLoad('k', slow);
    await clock.advance(3_500);
    assert.equal(calls, 1, 'still held after 3.5 lock TTLs');
    held.open();
    assert.deepEqual([await fromA, await fromB], ['slow but alive', 'slow but alive']);
    assert.equal(calls, 1);
  });

  it('stops waiting after maxWaitMs and loads without the lock', async () => {
    const { a, clock, store } = twoInstances({
      distributedLock: { ttlMs: 60_000, pollMs: 100, maxWaitMs: 500 },
    });
    assert.ok(await store.tryLock('k', 60_000));
    const result = a.getOrLoad('k', () => 'mine');
    await clock.advance(500);
    assert.equal(await result, 'mine');
    assert.equal(a.stats.lockTimeouts, 1);
  });

  it('reports a lost lock and does not cache what it loaded', async () => {
    const { a, b, store } = twoInstances({ distributedLock: true });
    const held = gate();
    const fromA = a.getOrLoad('k', async () => {
      await held.opened;
      return 'old';
    });
    await flushMicrotasks();
    await b.set('k', 'written meanwhile');
    held.open();
    assert.equal(await fromA, 'old');
    assert.equal(a.stats.lockLost, 1);
    assert.equal((await store.get('k', Date.UTC(2026, 0, 1)))?.value, 'written meanwhile');
  });
});

describe('cacheAside when the store fails', () => {
  it('reads from the loader and skips the put when the store get fails', async () => {
    const store = new FlakyStore();
    const { cache, events } = setup({ store, local: false });
    store.mode = 'fail';
    assert.equal(await cache.getOrLoad('k', () => 'from db'), 'from db');
    assert.deepEqual(store.calls, ['get k'], 'no put after a failed get');
    const error = events.find((e) => e.type === 'store-error');
    assert.ok(error?.type === 'store-error' && error.operation === 'get' && !error.circuitOpen);
  });

  it('returns the loaded value when the store put fails', async () => {
    const store = new FlakyStore();
    const { cache } = setup({ store, local: false });
    store.get = async () => undefined; // reads succeed (empty), writes fail
    store.mode = 'fail';
    assert.equal(await cache.getOrLoad('k', () => 'from db'), 'from db');
    assert.equal(cache.stats.storeErrors, 1);
  });

  it('opens the circuit after repeated failures, bypassing the store until it may have recovered', async () => {
    const store = new FlakyStore();
    const { cache, clock, events } = setup({
      store,
      local: false,
      breaker: { trip: { kind: 'consecutive-failures', failures: 3 }, openMs: 10_000 },
    });
    store.mode = 'fail';
    for (let i = 0; i < 5; i++) assert.equal(await cache.getOrLoad(`k${i}`, () => i), i);
    assert.equal(store.calls.length, 3, 'the last two never reached the store');
    assert.equal(cache.breaker.state, 'open');
    assert.ok(events.some((e) => e.type === 'store-error' && e.circuitOpen));
    store.mode = 'ok';
    await clock.advance(10_000);
    assert.equal(await cache.getOrLoad('k9', () => 9), 9);
    assert.equal(cache.breaker.state, 'closed');
    assert.equal(await cache.getOrLoad('k9', () => -1), 9, 'cached in the store again');
  });

  it('gives up on a store call that hangs after storeTimeoutMs', async () => {
    const store = new FlakyStore();
    const { cache, clock, events } = setup({ store, storeTimeoutMs: 200 });
    store.mode = 'hang';
    const read = cache.getOrLoad('k', () => 'from db');
    await clock.advance(200);
    assert.equal(await read, 'from db');
    assert.ok(events.some((e) => e.type === 'store-error' && /timed out/.test(String(e.error))));
  });

  it('accepts a breaker of your own', async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ clock });
    const release = breaker.isolate();
    const store = new FlakyStore();
    const cache: CacheAside = cacheAside({ clock, store, breaker });
    assert.equal(await cache.getOrLoad('k', () => 1), 1);
    assert.deepEqual(store.calls, [], 'isolated: the store is bypassed');
    release();
    await cache.delete('k');
    assert.deepEqual(store.calls, ['delete k']);
    cache.close();
  });
});
