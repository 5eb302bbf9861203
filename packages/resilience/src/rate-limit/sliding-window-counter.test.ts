import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { storeSuites } from './fixtures/store-suites.js';
import { slidingWindowCounter } from './sliding-window-counter.js';

const suites = await storeSuites('rate-limit-sliding-counter');

for (const suite of suites) {
  describe(`sliding window counter on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('weights the previous window by how much of it still overlaps the sliding window', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowCounter({ limit: 4, windowMs: 1000, ...suite.options(clock) });
      await clock.advanceTo(500);
      for (let i = 3; i >= 0; i--) assert.equal((await limiter.acquire('k')).remaining, i);
      // Full in this window: the next permit needs the next window, once 1 of its 4 carried-over permits
      // has slid out: 4 × (1 − 0.25) + 1 = 4 at t = 1250.
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 4,
        remaining: 0,
        resetMs: 1500,
        retryAfterMs: 750,
      });
      await clock.advanceTo(1000);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 4,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 250,
      });
      await clock.advanceTo(1249);
      assert.equal((await limiter.acquire('k')).allowed, false);
      await clock.advanceTo(1250);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 4,
        remaining: 0,
        resetMs: 1750,
        retryAfterMs: 0,
      });
      // Within the window: 4 × (1 − f) + 1 + 1 <= 4 once f = 0.5.
      assert.equal((await limiter.acquire('k')).retryAfterMs, 250);
      await clock.advanceTo(1500);
      assert.equal((await limiter.acquire('k')).allowed, true);
    });

    test('at an edge the previous window still counts in full; halfway it counts half (the estimate)', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowCounter({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      const burst = async (at: number) => {
        await clock.advanceTo(at);
        let admitted = 0;
        for (let i = 0; i < 10; i++) if ((await limiter.acquire('k')).allowed) admitted++;
        return admitted;
      };
      assert.equal(await burst(999), 5);
      assert.equal(await burst(1000), 0);
      // 5 × 0.5 + 2 = 4.5: two more fit although all five of t = 999 are still within the last second; the
      // documented bound is limit × (1 + 0.5) = 7.5.
      assert.equal(await burst(1500), 2);
    });

    test('forgets the previous window after a whole idle window, and takes costs above 1', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowCounter({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k', 5)).allowed, true);
      await clock.advanceTo(2000);
      assert.deepEqual(await limiter.acquire('k', 3), {
        allowed: true,
        limit: 5,
        remaining: 2,
        resetMs: 2000,
        retryAfterMs: 0,
      });
      assert.equal((await limiter.acquire('k', 3)).allowed, false);
      assert.equal((await limiter.acquire('k', 6)).retryAfterMs, Number.POSITIVE_INFINITY);
      assert.equal((await limiter.acquire('other', 5)).allowed, true);
      await limiter.reset('k');
      assert.equal((await limiter.acquire('k', 5)).allowed, true);
    });
  });
}

describe('sliding window counter options', () => {
  test('are validated', () => {
    assert.throws(() => slidingWindowCounter({ limit: 0, windowMs: 1000 }), /limit/);
    assert.throws(() => slidingWindowCounter({ limit: 1, windowMs: -1 }), /windowMs/);
  });
});
