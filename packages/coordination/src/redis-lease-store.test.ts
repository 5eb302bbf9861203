import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { redisForSuite } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { leaseStoreContract } from './lease-store.contract.js';
import { RedisLeaseStore } from './redis-lease-store.js';

const suite = await redisForSuite('coordination-leases');
let stores = 0;

describe('RedisLeaseStore', { skip: suite.skip }, () => {
  const client = suite.skip ? undefined : new Redis(suite.url as string);
  after(async () => {
    client?.disconnect();
    await suite.release();
  });

  leaseStoreContract(
    'redis',
    async () => new RedisLeaseStore({ client: client as Redis, prefix: `${suite.keyPrefix}${++stores}:` }),
  );

  it('keeps millisecond fractions of expiry times exact', async () => {
    const store = new RedisLeaseStore({ client: client as Redis, prefix: `${suite.keyPrefix}frac:` });
    const now = 1_750_000_000_000.25;
    const result = await store.acquire({ name: 'n', owner: 'a', ttlMs: 1000.5, now });
    assert.ok(result.acquired);
    assert.deepEqual(await store.holders('n', now), [{ owner: 'a', token: 1, expiresAt: now + 1000.5 }]);
  });

  it('validates its options', () => {
    assert.throws(() => new RedisLeaseStore({ client: {} as Redis }), /client/);
  });
});
