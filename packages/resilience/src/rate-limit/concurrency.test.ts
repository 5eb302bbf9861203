import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { concurrencyLimit } from './concurrency.js';
import { storeSuites } from './fixtures/store-suites.js';
import { MemoryRateLimitStore } from './memory-store.js';

const suites = await storeSuites('rate-limit-concurrency');

for (const suite of suites) {
  describe(`concurrency limit on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('holds at most maxInFlight permits until they are released', async () => {
      const clock = new VirtualClock();
      const limiter = concurrencyLimit({ maxInFlight: 2, leaseMs: 10_000, ...suite.options(clock) });
      const first = await limiter.acquire('k');
      const second = await limiter.acquire('k');
      assert.equal(first.allowed && second.allowed, true);
      assert.equal(second.remaining, 0);
      assert.ok(first.lease && second.lease && first.lease.id !== second.lease.id);
      await clock.advance(1000);
      const refused = await limiter.acquire('k');
      assert.deepEqual(refused, {
        allowed: false,
        limit: 2,
        remaining: 0,
        resetMs: 9000,
        retryAfterMs: 9000,
        lease: undefined,
      });
      await first.lease.release();
      await first.lease.release(); // twice is harmless
      const third = await limiter.acquire('k');
      assert.equal(third.allowed, true);
      assert.equal(third.remaining, 0);
      assert.equal((await limiter.acquire('k')).allowed, false);
      assert.equal((await limiter.acquire('other')).allowed, true);
    });

    test('gives expired leases back, so a crashed holder cannot leak permits', async () => {
      const clock = new VirtualClock();
      const limiter = concurrencyLimit({ maxInFlight: 1, leaseMs: 5000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k')).allowed, true);
      await clock.advance(4999);
      assert.equal((await limiter.acquire('k')).retryAfterMs, 1);
      await clock.advance(1);
      assert.equal((await limiter.acquire('k')).allowed, true);
    });

    test('a cost above 1 holds that many permits, released together; reset drops every lease', async () => {
      const clock = new VirtualClock();
      const limiter = concurrencyLimit({ maxInFlight: 3, leaseMs: 10_000, ...suite.options(clock) });
      const big = await limiter.acquire('k', 2);
      assert.equal(big.remaining, 1);
      assert.equal((await limiter.acquire('k', 2)).allowed, false);
      await big.lease?.release();
      assert.equal((await limiter.acquire('k', 3)).allowed, true);
      assert.equal((await limiter.acquire('k', 4)).retryAfterMs, Number.POSITIVE_INFINITY);
      await limiter.reset('k');
      assert.equal((await limiter.acquire('k', 3)).allowed, true);
    });
  });
}

describe('concurrency limit options', () => {
  test('are validated; leases must expire on a shared store', () => {
    assert.throws(() => concurrencyLimit({ maxInFlight: 0 }), /maxInFlight/);
    assert.throws(() => concurrencyLimit({ maxInFlight: 1, leaseMs: 0 }), /leaseMs/);
    const shared = { kind: 'redis', bind: () => assert.fail('not reached') };
    assert.throws(
      () => concurrencyLimit({ maxInFlight: 1, leaseMs: Number.POSITIVE_INFINITY, store: shared }),
      /leaseMs/,
    );
  });

  test('in memory, leases do not expire unless asked to', () => {
    const clock = new VirtualClock();
    const limiter = concurrencyLimit({ maxInFlight: 1, clock, store: new MemoryRateLimitStore() });
    const held = limiter.tryAcquire('k');
    assert.equal(held.allowed, true);
    const refused = limiter.tryAcquire('k');
    assert.equal(refused.retryAfterMs, Number.POSITIVE_INFINITY);
    assert.equal(refused.resetMs, Number.POSITIVE_INFINITY);
    void held.lease?.release();
    assert.equal(limiter.tryAcquire('k').allowed, true);
  });
});
