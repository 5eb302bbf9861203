import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { redisForSuite, VirtualClock, waitUntil } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { cacheStoreContract } from './cache-store.contract.js';
import { RedisCacheStore } from './redis-store.js';

const suite = await redisForSuite('data-redis-store');

describe('redis cache store options', () => {
  it('needs exactly one of client and url, and a real codec', () => {
    const client = new Redis({ lazyConnect: true });
    assert.throws(() => new RedisCacheStore({}), InvalidOptionsError);
    assert.throws(() => new RedisCacheStore({ client, url: 'redis://127.0.0.1' }), /exactly one/);
    assert.throws(() => new RedisCacheStore({ client: {} as never }), /ioredis/);
    assert.throws(() => new RedisCacheStore({ client, keyPrefix: 5 as never }), /keyPrefix/);
    assert.throws(() => new RedisCacheStore({ client, codec: { encode: JSON.stringify } as never }), /codec/);
    client.disconnect();
  });
});

describe('redis cache store', { skip: suite.skip }, () => {
  const url = suite.url as string;
  const clients: Redis[] = [];
  after(async () => {
    await suite.release();
    for (const client of clients) client.disconnect();
  });
  const connect = () => {
    const client = new Redis(url);
    clients.push(client);
    return client;
  };

  cacheStoreContract('redis', async () => {
    const clock = new VirtualClock();
    const keyPrefix = `${suite.keyPrefix}contract:`;
    // Two clients, as two processes would have.
    const store = new RedisCacheStore({ client: connect(), keyPrefix, clock });
    const peer = new RedisCacheStore({ client: connect(), keyPrefix, clock });
    return {
      store,
      peer,
      clock,
      // Redis times lock expiry itself, in real time.
      async lapse(ms) {
        const until = performance.now() + ms;
        await waitUntil(() => performance.now() >= until, `${ms} ms passed`);
      },
      async close() {
        await store.close();
        await peer.close();
      },
    };
  });

  it('stores entries under its prefix with Redis expiry at staleUntil', async () => {
    const client = connect();
    const keyPrefix = `${suite.keyPrefix}expiry:`;
    const store = new RedisCacheStore({ client, keyPrefix });
    const now = Date.now();
    await store.set('k', { value: 1, freshUntil: now + 1_000, staleUntil: now + 60_000 }, now, {
      origin: 'x',
    });
    const pttl = await client.pttl(`${keyPrefix}v:k`);
    assert.ok(pttl > 1_000 && pttl <= 60_000, `pttl ${pttl}`);
    await store.close();
  });

  it('opens and closes a client of its own from a url, leaving given clients open', async () => {
    const store = new RedisCacheStore({ url, keyPrefix: `${suite.keyPrefix}url:` });
    const now = Date.now();
    await store.set('k', { value: 'v', freshUntil: now + 1_000, staleUntil: now + 1_000 }, now, {
      origin: 'x',
    });
    assert.equal((await store.get('k', now))?.value, 'v');
    await store.ready();
    await store.close();
    const given = connect();
    const other = new RedisCacheStore({ client: given, keyPrefix: `${suite.keyPrefix}url:` });
    await other.ready();
    await other.close();
    assert.equal(await given.ping(), 'PONG');
  });

  it('subscribes even when the app client fails fast while disconnected (no offline queue)', async () => {
    const failFast = new Redis(url, { enableOfflineQueue: false, lazyConnect: true });
    clients.push(failFast);
    const keyPrefix = `${suite.keyPrefix}failfast:`;
    const store = new RedisCacheStore({ client: failFast, keyPrefix });
    const seen: string[] = [];
    store.onInvalidation((m) => seen.push(...m.keys));
    await store.ready();
    const peer = new RedisCacheStore({ client: connect(), keyPrefix });
    await peer.delete(['k'], { origin: 'peer' });
    await waitUntil(() => seen.includes('k'), 'the invalidation reaches the fail-fast store');
    await store.close();
    await peer.close();
  });

  it('uses a custom codec', async () => {
    const store = new RedisCacheStore({
      client: connect(),
      keyPrefix: `${suite.keyPrefix}codec:`,
      codec: { encode: (v) => `<${String(v)}>`, decode: (t) => t.toUpperCase() },
    });
    const now = Date.now();
    await store.set('k', { value: 'abc', freshUntil: now + 1_000, staleUntil: now + 1_000 }, now, {
      origin: 'x',
    });
    assert.equal((await store.get('k', now))?.value, '<ABC>');
    await store.close();
  });
});
