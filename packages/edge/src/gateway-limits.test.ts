import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type RateLimitStore, RedisRateLimitStore } from '@stratus/resilience';
import { redisForSuite, VirtualClock } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { type GatewayConfig, type GatewayEvent, type GatewayServer, startGateway } from './index.js';
import { call, startUpstream, type TestUpstream } from './upstream.test-support.js';

const limitedConfig = (url: string, onStoreFailure?: 'allow' | 'refuse'): GatewayConfig => ({
  upstreams: { app: { targets: [url] } },
  rateLimits: {
    'per-key': {
      limit: 3,
      windowMs: 1_000,
      key: { header: 'x-api-key' },
      ...(onStoreFailure ? { onStoreFailure } : {}),
    },
  },
  routes: [
    { name: 'limited', match: { prefix: '/api' }, upstream: 'app', rateLimit: 'per-key' },
    { name: 'free', upstream: 'app' },
  ],
});

describe('gateway rate limits', () => {
  let app: TestUpstream;
  let gateway: GatewayServer;
  const clock = new VirtualClock();

  before(async () => {
    app = await startUpstream('app');
    gateway = await startGateway({ config: limitedConfig(app.url), clock });
  });
  after(async () => {
    await gateway.close();
    await app.close();
  });

  it('answers 429 with Retry-After and RateLimit fields past the limit, per key, and never calls the upstream', async () => {
    const alice = { 'x-api-key': 'alice' };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await call(gateway.url, '/api/x', { headers: alice });
      statuses.push(answer.status);
      assert.equal(answer.headers['ratelimit-remaining'], String(2 - i));
    }
    const seen = app.seen.length;
    const refused = await call(gateway.url, '/api/x', { headers: alice });
    assert.deepEqual([...statuses, refused.status], [200, 200, 200, 429]);
    assert.equal(app.seen.length, seen);
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(String(refused.headers.ratelimit), /"per-key";r=0/);
    // Another key, and another route, are not limited.
    assert.equal((await call(gateway.url, '/api/x', { headers: { 'x-api-key': 'bob' } })).status, 200);
    assert.equal((await call(gateway.url, '/other', { headers: alice })).status, 200);
    // A third of the window later, one permit is back (GCRA refills smoothly).
    await clock.advance(334);
    assert.equal((await call(gateway.url, '/api/x', { headers: alice })).status, 200);
    assert.equal((await call(gateway.url, '/api/x', { headers: alice })).status, 429);
  });
});

/** A store that cannot answer: what a shared store is during an outage. */
const downStore: RateLimitStore = {
  bind: (_algorithm: unknown, options: { name: string }) => ({
    name: options.name,
    algorithm: 'gcra',
    limit: 3,
    windowMs: 1_000,
    store: 'redis',
    leased: false,
    events: undefined as never,
    acquire: async () => {
      throw new Error('connection refused');
    },
    reset: async () => {},
  }),
} as unknown as RateLimitStore;

describe('gateway rate limits when the store is down', () => {
  for (const [onStoreFailure, expected] of [
    ['allow', 200],
    ['refuse', 503],
  ] as const) {
    it(`${onStoreFailure}: answers ${expected} and says so in an event`, async () => {
      const app = await startUpstream('app');
      const gateway = await startGateway({
        config: limitedConfig(app.url, onStoreFailure),
        rateLimitStore: downStore,
      });
      const events: GatewayEvent[] = [];
      gateway.gateway.events.on((event) => {
        if (event.type === 'rate-limit-store-failed') events.push(event);
      });
      try {
        assert.equal((await call(gateway.url, '/api/x', { headers: { 'x-api-key': 'a' } })).status, expected);
        assert.deepEqual(
          events.map((e) => e.type === 'rate-limit-store-failed' && [e.limit, e.allowed]),
          [['per-key', onStoreFailure === 'allow']],
        );
      } finally {
        await gateway.close();
        await app.close();
      }
    });
  }
});

const redis = await redisForSuite('edge-gateway-limits');

describe('gateway rate limits shared through Redis', { skip: redis.skip }, () => {
  const client = new Redis(redis.url ?? '', { lazyConnect: true, maxRetriesPerRequest: 1 });
  after(async () => {
    await redis.release();
    client.disconnect();
  });

  it('holds two gateways to one limit', async () => {
    const app = await startUpstream('app');
    const clock = new VirtualClock();
    const store = () => new RedisRateLimitStore({ client, prefix: `${redis.keyPrefix}gw:`, time: clock });
    const [one, two] = await Promise.all([
      startGateway({ config: limitedConfig(app.url), rateLimitStore: store(), clock }),
      startGateway({ config: limitedConfig(app.url), rateLimitStore: store(), clock }),
    ]);
    try {
      const statuses: number[] = [];
      for (const gateway of [one, two, one, two, one]) {
        statuses.push((await call(gateway.url, '/api/x', { headers: { 'x-api-key': 'shared' } })).status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    } finally {
      await Promise.all([one.close(), two.close()]);
      await app.close();
    }
  });
});
