import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { storeSuites } from './fixtures/store-suites.js';
import { gcra } from './gcra.js';

const suites = await storeSuites('rate-limit-gcra');

for (const suite of suites) {
  describe(`GCRA on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('admits the burst, then one request per emission interval, exactly on time', async () => {
      const clock = new VirtualClock();
      const limiter = gcra({ limit: 2, periodMs: 1000, ...suite.options(clock) });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 2,
        remaining: 1,
        resetMs: 500,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 2,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 2,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 500,
      });
      await clock.advance(499);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 2,
        remaining: 0,
        resetMs: 501,
        retryAfterMs: 1,
      });
      await clock.advance(1);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 2,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
      });
    });

    test('a burst smaller than the rate spaces requests out from the start', async () => {
      const clock = new VirtualClock();
      const limiter = gcra({ limit: 10, periodMs: 1000, burst: 1, ...suite.options(clock) });
      assert.equal(limiter.limit, 1);
      let admitted = 0;
      for (let t = 0; t < 1000; t += 10) {
        if ((await limiter.acquire('k')).allowed) admitted++;
        await clock.advance(10);
      }
      assert.equal(admitted, 10);
    });

    test('handles an emission interval that is not a whole number of milliseconds', async () => {
      const clock = new VirtualClock();
      const limiter = gcra({ limit: 3, periodMs: 1000, ...suite.options(clock) });
      for (let i = 0; i < 3; i++) assert.equal((await limiter.acquire('k')).allowed, true);
      const refused = await limiter.acquire('k');
      assert.equal(refused.allowed, false);
      assert.ok(Math.abs(refused.retryAfterMs - 1000 / 3) < 0.01);
      await clock.advance(333);
      assert.equal((await limiter.acquire('k')).allowed, false);
      await clock.advance(1);
      assert.equal((await limiter.acquire('k')).allowed, true);
      await clock.advance(333); // t = 667 ≥ 2 × 333.3
      assert.equal((await limiter.acquire('k')).allowed, true);
    });

    test('takes a cost above 1 and keeps keys apart', async () => {
      const clock = new VirtualClock();
      const limiter = gcra({ limit: 4, periodMs: 1000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('a', 3)).remaining, 1);
      const refused = await limiter.acquire('a', 2);
      assert.equal(refused.allowed, false);
      assert.equal(refused.retryAfterMs, 250);
      assert.equal((await limiter.acquire('b', 4)).allowed, true);
      assert.equal((await limiter.acquire('a', 5)).retryAfterMs, Number.POSITIVE_INFINITY);
      await limiter.reset('a');
      assert.equal((await limiter.acquire('a', 4)).allowed, true);
    });
  });
}

describe('GCRA options', () => {
  test('are validated', () => {
    assert.throws(() => gcra({ limit: 0, periodMs: 1000 }), /limit/);
    assert.throws(() => gcra({ limit: 1, periodMs: 0 }), /periodMs/);
    assert.throws(() => gcra({ limit: 1, periodMs: 1000, burst: 0 }), /burst/);
    assert.throws(() => gcra({ limit: 1, periodMs: 1000, burst: 1.5 }), /burst/);
  });
});
