/**
 * CacheAside over the real Redis adapter: two instances (each with its own connection, as two processes would
 * have) sharing the store, invalidation broadcast between their local tiers, the distributed lock, and a real
 * outage (the server stopped under the cache).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { redisForSuite, startRedis, waitUntil } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { cacheAside } from './cache.js';
import type { CacheEvent } from './events.js';
import { RedisCacheStore } from './redis-store.js';

const suite = await redisForSuite('data-cache-redis');

describe('cacheAside on Redis', { skip: suite.skip }, () => {
  const url = suite.url as string;
  const clients: Redis[] = [];
  const stores: RedisCacheStore[] = [];
  after(async () => {
    await suite.release();
    for (const store of stores) await store.close();
    for (const client of clients) client.disconnect();
  });
  /** One instance: its own connection, store and cache; `prefix` names the shared key space. */
  const instance = (prefix: string, name: string, distributedLock = false, local = true) => {
    const client = new Redis(url);
    clients.push(client);
    const store = new RedisCacheStore({ client, keyPrefix: `${suite.keyPrefix}${prefix}:` });
    stores.push(store);
    return cacheAside({ name, store, distributedLock, local: local ? {} : false });
  };

  it("evicts a key from the other instance's local tier on delete and on set", async () => {
    const a = instance('broadcast', 'a');
    const b = instance('broadcast', 'b');
    await Promise.all([a.ready(), b.ready()]);
    const db = { value: 'v1' };
    let loads = 0;
    const load = () => {
      loads++;
      return db.value;
    };
    assert.equal(await a.getOrLoad('user:1', load), 'v1');
    assert.equal(await b.getOrLoad('user:1', load), 'v1');
    assert.equal(loads, 1, 'b read it from Redis');
    assert.equal(b.stats.localEntries, 1);

    db.value = 'v2';
    await a.invalidateAfter(() => {}, 'user:1');
    await waitUntil(() => b.stats.localEntries === 0, "a's delete reaches b's local tier");
    assert.equal(await b.getOrLoad('user:1', load), 'v2');

    await a.set('user:1', 'v3');
    await waitUntil(() => b.stats.localEntries === 0, "a's set reaches b's local tier");
    assert.equal(await b.getOrLoad('user:1', load), 'v3');
    assert.equal(b.stats.remoteInvalidations, 2);
    a.close();
    b.close();
  });

  it('never lets a load that read before a write put its older value in Redis after the invalidation', async () => {
    // The reader has no local tier, so no broadcast tells it about the write: only the fenced fill protects Redis.
    const reader = instance('fence', 'reader', false, false);
    const writer = instance('fence', 'writer', false, false);
    const db = { value: 'old' };
    let releaseRead!: () => void;
    const readerHolds = new Promise<void>((resolve) => {
      releaseRead = resolve;
    });
    let readStarted = false;
    const slowRead = reader.getOrLoad('k', async () => {
      const read = db.value;
      readStarted = true;
      await readerHolds;
      return read;
    });
    await waitUntil(() => readStarted, 'the reader has read the old row');
    await writer.invalidateAfter(() => {
      db.value = 'new';
    }, 'k');
    releaseRead();
    assert.equal(await slowRead, 'old', 'the early reader gets what it read');
    assert.equal(reader.stats.lockLost, 1, 'its fill was fenced off');
    const fresh = instance('fence', 'fresh', false, false);
    assert.equal(await fresh.getOrLoad('k', () => db.value), 'new');
  });

  it('keeps per-item TTLs in Redis', async () => {
    const a = instance('ttl', 'a');
    await a.getOrLoad('k', () => 'v', { ttlMs: 5_000 });
    const pttl = await clients.at(-1)!.pttl(`${suite.keyPrefix}ttl:v:k`);
    assert.ok(pttl > 0 && pttl <= 5_000, `pttl ${pttl}`);
  });

  it('loads once for concurrent misses in two instances with distributedLock', async () => {
    const a = instance('lock', 'a', true);
    const b = instance('lock', 'b', true);
    await Promise.all([a.ready(), b.ready()]);
    let loads = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const loader = async () => {
      loads++;
      await released;
      return 'value';
    };
    // Either instance may win the lock; the load is held until the other one is seen waiting for it.
    const waiting = Promise.race([a, b].map((c) => c.events.once((e) => e.type === 'lock-wait')));
    const fromA = Promise.all(Array.from({ length: 50 }, () => a.getOrLoad('k', loader)));
    const fromB = Promise.all(Array.from({ length: 50 }, () => b.getOrLoad('k', loader)));
    await waiting;
    release();
    const values = [...(await fromA), ...(await fromB)];
    assert.equal(values.length, 100);
    assert.ok(values.every((v) => v === 'value'));
    assert.equal(loads, 1);
  });

  it('drops its whole local tier when the broadcast connection comes back after a drop', async () => {
    const server = await startRedis();
    try {
      const client = new Redis(server.url);
      client.on('error', () => {});
      clients.push(client);
      const store = new RedisCacheStore({ client, keyPrefix: 'reconnect:' });
      stores.push(store);
      const cache = cacheAside({ store });
      await cache.ready();
      await cache.getOrLoad('a', () => 1);
      await cache.getOrLoad('b', () => 2);
      assert.equal(cache.stats.localEntries, 2);
      const dropped = cache.events.once((e) => e.type === 'remote-invalidation' && e.all);
      // Invalidations sent while the subscriber was away are lost: everything local is suspect.
      await server.restart();
      await dropped;
      assert.equal(cache.stats.localEntries, 0);
      cache.close();
    } finally {
      await server.stop();
    }
  });

  it('answers every read from the loader while Redis is down, with events, and opens the circuit', async () => {
    const server = await startRedis();
    try {
      const client = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      client.on('error', () => {});
      clients.push(client);
      await waitUntil(() => client.status === 'ready', 'the client is connected');
      const store = new RedisCacheStore({ client, keyPrefix: 'outage:' });
      stores.push(store);
      const cache = cacheAside({
        store,
        local: false,
        breaker: { trip: { kind: 'consecutive-failures', failures: 3 }, openMs: 60_000 },
      });
      const events: CacheEvent[] = [];
      cache.events.on((e) => events.push(e));
      assert.equal(await cache.getOrLoad('k', () => 'cached'), 'cached');
      assert.equal(await cache.getOrLoad('k', () => 'unused'), 'cached');

      await server.stop();
      await waitUntil(() => client.status !== 'ready', 'the client sees the server gone');
      for (let i = 0; i < 5; i++) assert.equal(await cache.getOrLoad('k', () => `db ${i}`), `db ${i}`);
      const errors = events.filter((e) => e.type === 'store-error');
      assert.ok(errors.length >= 3, `store errors reported (${errors.length})`);
      assert.ok(
        errors.some((e) => e.type === 'store-error' && e.circuitOpen),
        'then the circuit opened',
      );
      assert.equal(cache.breaker.state, 'open');
    } finally {
      await server.stop();
    }
  });
});
