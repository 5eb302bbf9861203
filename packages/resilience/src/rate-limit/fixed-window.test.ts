import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { fixedWindow } from './fixed-window.js';
import { storeSuites } from './fixtures/store-suites.js';

const suites = await storeSuites('rate-limit-fixed-window');

for (const suite of suites) {
  describe(`fixed window on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('admits exactly `limit` per window and opens again at the window edge', async () => {
      const clock = new VirtualClock();
      const limiter = fixedWindow({ limit: 3, windowMs: 1000, ...suite.options(clock) });
      await clock.advance(200);
      for (let i = 2; i >= 0; i--) {
        assert.deepEqual(await limiter.acquire('a'), {
          allowed: true,
          limit: 3,
          remaining: i,
          resetMs: 800,
          retryAfterMs: 0,
        });
      }
      await clock.advance(799); // t = 999: last millisecond of the window
      assert.deepEqual(await limiter.acquire('a'), {
        allowed: false,
        limit: 3,
        remaining: 0,
        resetMs: 1,
        retryAfterMs: 1,
      });
      await clock.advance(1); // t = 1000: a new window
      assert.deepEqual(await limiter.acquire('a'), {
        allowed: true,
        limit: 3,
        remaining: 2,
        resetMs: 1000,
        retryAfterMs: 0,
      });
    });

    test('lets 2 × limit through within two milliseconds at a window edge', async () => {
      const clock = new VirtualClock();
      const limiter = fixedWindow({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      await clock.advance(999);
      let admitted = 0;
      for (let i = 0; i < 10; i++) if ((await limiter.acquire('edge')).allowed) admitted++;
      await clock.advance(1);
      for (let i = 0; i < 10; i++) if ((await limiter.acquire('edge')).allowed) admitted++;
      assert.equal(admitted, 10);
    });

    test('keeps keys apart', async () => {
      const clock = new VirtualClock();
      const limiter = fixedWindow({ limit: 1, windowMs: 1000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('tenant-a')).allowed, true);
      assert.equal((await limiter.acquire('tenant-a')).allowed, false);
      assert.equal((await limiter.acquire('tenant-b')).allowed, true);
    });

    test('counts a cost above 1, refuses what does not fit, and never admits more than the limit', async () => {
      const clock = new VirtualClock();
      const limiter = fixedWindow({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      assert.deepEqual(await limiter.acquire('k', 3), {
        allowed: true,
        limit: 5,
        remaining: 2,
        resetMs: 1000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k', 3), {
        allowed: false,
        limit: 5,
        remaining: 2,
        resetMs: 1000,
        retryAfterMs: 1000,
      });
      assert.equal((await limiter.acquire('k', 2)).allowed, true);
      const tooBig = await limiter.acquire('other', 6);
      assert.equal(tooBig.allowed, false);
      assert.equal(tooBig.retryAfterMs, Number.POSITIVE_INFINITY);
      assert.deepEqual(await limiter.acquire('k', 0), {
        allowed: true,
        limit: 5,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
      });
    });

    test('reset(key) gives the key its full quota back', async () => {
      const clock = new VirtualClock();
      const limiter = fixedWindow({ limit: 1, windowMs: 60_000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k')).allowed, true);
      assert.equal((await limiter.acquire('k')).allowed, false);
      await limiter.reset('k');
      assert.equal((await limiter.acquire('k')).allowed, true);
    });

    // Only shared stores have a clock of their own; the memory store always runs on the limiter's clock.
    if (suite.label !== 'memory') {
      test('on the store clock (server time) it admits exactly the limit', async () => {
        const limiter = fixedWindow({
          limit: 3,
          windowMs: 3_600_000,
          ...suite.options(new VirtualClock(), true),
        });
        const results = [];
        for (let i = 0; i < 5; i++) results.push(await limiter.acquire('k'));
        assert.deepEqual(
          results.map((r) => r.allowed),
          [true, true, true, false, false],
        );
        // Unless this ran across an hour boundary, the refusal points at the end of the current hour.
        const refusal = results[4]!;
        assert.ok(refusal.retryAfterMs > 0 && refusal.retryAfterMs <= 3_600_000);
      });
    }
  });
}

describe('fixed window options', () => {
  test('are validated', () => {
    assert.throws(() => fixedWindow({ limit: 0, windowMs: 1000 }), InvalidOptionsError);
    assert.throws(() => fixedWindow({ limit: 1.5, windowMs: 1000 }), /limit/);
    assert.throws(() => fixedWindow({ limit: 1, windowMs: 0 }), /windowMs/);
    assert.throws(() => fixedWindow({ limit: 1, windowMs: -5 }), /windowMs/);
    assert.throws(() => fixedWindow({ limit: 1, windowMs: 1000, name: '' }), /name/);
    assert.throws(() => fixedWindow({ limit: 1, windowMs: 1000, name: 'login:v2' }), /without ':'/);
    const limiter = fixedWindow({ limit: 1, windowMs: 1000 });
    assert.throws(() => limiter.tryAcquire('k', -1), /cost/);
    assert.throws(() => limiter.tryAcquire('k', 0.5), /cost/);
  });

  test('the memory store answers synchronously', () => {
    const clock = new VirtualClock();
    const limiter = fixedWindow({ limit: 2, windowMs: 1000, clock });
    assert.equal(limiter.tryAcquire('k').remaining, 1);
    assert.equal(limiter.tryAcquire('k').remaining, 0);
    assert.equal(limiter.tryAcquire('k').allowed, false);
  });
});
