import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { storeSuites } from './fixtures/store-suites.js';
import { tokenBucket } from './token-bucket.js';

const suites = await storeSuites('rate-limit-token-bucket');

for (const suite of suites) {
  describe(`token bucket on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('starts full, spends the burst, then admits exactly at the refill rate', async () => {
      const clock = new VirtualClock();
      const limiter = tokenBucket({
        capacity: 3,
        refillRate: 1,
        refillIntervalMs: 1000,
        ...suite.options(clock),
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 2,
        resetMs: 1000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 1,
        resetMs: 2000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 0,
        resetMs: 3000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 3,
        remaining: 0,
        resetMs: 3000,
        retryAfterMs: 1000,
      });
      await clock.advance(999);
      const early = await limiter.acquire('k');
      assert.equal(early.allowed, false);
      assert.equal(Math.round(early.retryAfterMs), 1);
      await clock.advance(1);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 0,
        resetMs: 3000,
        retryAfterMs: 0,
      });
      await clock.advance(60_000); // refills up to the capacity, never past it
      assert.equal((await limiter.acquire('k')).remaining, 2);
    });

    test('admits a token the moment it is due, even at a rate that is not exact in binary', async () => {
      const clock = new VirtualClock();
      const limiter = tokenBucket({ capacity: 1, refillRate: 5, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k')).allowed, true);
      for (let i = 0; i < 20; i++) {
        await clock.advance(199);
        assert.equal((await limiter.acquire('k')).allowed, false, `step ${i} too early`);
        await clock.advance(1);
        assert.equal((await limiter.acquire('k')).allowed, true, `step ${i} on time`);
      }
    });

    test('takes a cost above 1 and refuses what the bucket cannot cover', async () => {
      const clock = new VirtualClock();
      const limiter = tokenBucket({ capacity: 4, refillRate: 2, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k', 3)).remaining, 1);
      const refused = await limiter.acquire('k', 2);
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfterMs, 500);
      await clock.advance(500);
      assert.deepEqual(await limiter.acquire('k', 2), {
        allowed: true,
        limit: 4,
        remaining: 0,
        resetMs: 2000,
        retryAfterMs: 0,
      });
      const never = await limiter.acquire('k', 5);
      assert.equal(never.allowed, false);
      assert.equal(never.retryAfterMs, Number.POSITIVE_INFINITY);
    });

    test('keeps keys apart', async () => {
      const clock = new VirtualClock();
      const limiter = tokenBucket({ capacity: 1, refillRate: 1, ...suite.options(clock) });
      assert.equal((await limiter.acquire('a')).allowed, true);
      assert.equal((await limiter.acquire('a')).allowed, false);
      assert.equal((await limiter.acquire('b')).allowed, true);
      await limiter.reset('a');
      assert.equal((await limiter.acquire('a')).allowed, true);
    });
  });
}

describe('token bucket options', () => {
  test('are validated', () => {
    assert.throws(() => tokenBucket({ capacity: 0, refillRate: 1 }), InvalidOptionsError);
    assert.throws(() => tokenBucket({ capacity: 2.5, refillRate: 1 }), /capacity/);
    assert.throws(() => tokenBucket({ capacity: 1, refillRate: 0 }), /refillRate/);
    assert.throws(() => tokenBucket({ capacity: 1, refillRate: -1 }), /refillRate/);
    assert.throws(() => tokenBucket({ capacity: 1, refillRate: 1, refillIntervalMs: 0 }), /refillIntervalMs/);
  });

  test('the quota window is the time an empty bucket takes to fill', () => {
    assert.equal(tokenBucket({ capacity: 10, refillRate: 5 }).windowMs, 2000);
  });
});
