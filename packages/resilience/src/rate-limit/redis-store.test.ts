import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { redisForSuite, VirtualClock } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { fixedWindow } from './fixed-window.js';
import { RedisRateLimitStore } from './redis-store.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';

describe('redis store options', () => {
  test('are validated', () => {
    assert.throws(() => new RedisRateLimitStore({ client: {} as never }), InvalidOptionsError);
    const client = new Redis({ lazyConnect: true });
    assert.throws(() => new RedisRateLimitStore({ client, prefix: 5 as never }), /prefix/);
    assert.throws(() => new RedisRateLimitStore({ client, time: 'local' as never }), /time/);
    client.disconnect();
  });
});

const suite = await redisForSuite('rate-limit-redis-store');

describe('redis store', { skip: suite.skip }, () => {
  const client = new Redis(suite.url ?? '', { lazyConnect: true, maxRetriesPerRequest: 1 });
  after(async () => {
    await suite.release();
    client.disconnect();
  });

  test('keys are <prefix><algorithm>:<name>:<key> and expire 1 s after the state is as good as new', async () => {
    const clock = new VirtualClock();
    const store = new RedisRateLimitStore({ client, prefix: `${suite.keyPrefix}a:`, time: clock });
    const limiter = fixedWindow({ store, name: 'login', limit: 5, windowMs: 60_000 });
    await clock.advance(15_000);
    await limiter.acquire('alice');
    const ttl = await client.pttl(`${suite.keyPrefix}a:fixed-window:login:alice`);
    assert.ok(ttl > 45_000 && ttl <= 46_000, `ttl ${ttl}`);
    const log = slidingWindowLog({ store, name: 'log', limit: 5, windowMs: 10_000 });
    await log.acquire('bob');
    const logTtl = await client.pttl(`${suite.keyPrefix}a:sliding-window-log:log:bob`);
    assert.ok(logTtl > 10_000 && logTtl <= 11_000, `ttl ${logTtl}`);
  });

  test('limiters of different algorithms with the same name do not share keys', async () => {
    const clock = new VirtualClock();
    const store = new RedisRateLimitStore({ client, prefix: `${suite.keyPrefix}d:`, time: clock });
    const window = fixedWindow({ store, name: 'login', limit: 2, windowMs: 60_000 });
    const bucket = tokenBucket({ store, name: 'login', capacity: 5, refillRate: 1 });
    assert.equal((await window.acquire('alice')).remaining, 1);
    assert.equal((await bucket.acquire('alice')).remaining, 4);
    assert.equal((await window.acquire('alice')).remaining, 0);
  });

  test('limiters with the same name share counters; different prefixes do not', async () => {
    const clock = new VirtualClock();
    const one = fixedWindow({
      store: new RedisRateLimitStore({ client, prefix: `${suite.keyPrefix}b:`, time: clock }),
      name: 'api',
      limit: 2,
      windowMs: 60_000,
    });
    const two = fixedWindow({
      store: new RedisRateLimitStore({ client, prefix: `${suite.keyPrefix}b:`, time: clock }),
      name: 'api',
      limit: 2,
      windowMs: 60_000,
    });
    const elsewhere = fixedWindow({
      store: new RedisRateLimitStore({ client, prefix: `${suite.keyPrefix}c:`, time: clock }),
      name: 'api',
      limit: 2,
      windowMs: 60_000,
    });
    assert.equal((await one.acquire('k')).remaining, 1);
    assert.equal((await two.acquire('k')).remaining, 0);
    assert.equal((await one.acquire('k')).allowed, false);
    assert.equal((await elsewhere.acquire('k')).remaining, 1);
  });
});
