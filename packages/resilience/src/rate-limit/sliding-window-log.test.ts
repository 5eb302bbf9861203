import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { fixedWindow } from './fixed-window.js';
import { storeSuites } from './fixtures/store-suites.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import type { RateLimiter } from './types.js';

const suites = await storeSuites('rate-limit-sliding-log');

/** Sends `attempts` requests at `at` and counts those admitted. */
async function burst(
  limiter: RateLimiter,
  clock: VirtualClock,
  at: number,
  attempts: number,
): Promise<number> {
  await clock.advanceTo(at);
  let admitted = 0;
  for (let i = 0; i < attempts; i++) if ((await limiter.acquire('k')).allowed) admitted++;
  return admitted;
}

for (const suite of suites) {
  describe(`sliding window log on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('a permit counts for exactly one window after it was granted', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowLog({ limit: 3, windowMs: 1000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k')).allowed, true); // t = 0
      await clock.advanceTo(400);
      assert.equal((await limiter.acquire('k')).allowed, true);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
      });
      await clock.advanceTo(600);
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 3,
        remaining: 0,
        resetMs: 800,
        retryAfterMs: 400,
      });
      await clock.advanceTo(999);
      assert.equal((await limiter.acquire('k')).retryAfterMs, 1);
      await clock.advanceTo(1000); // the permit of t = 0 slides out
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: true,
        limit: 3,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 0,
      });
      assert.deepEqual(await limiter.acquire('k'), {
        allowed: false,
        limit: 3,
        remaining: 0,
        resetMs: 1000,
        retryAfterMs: 400,
      });
    });

    test('has no edge burst: a full quota at 999 ms leaves nothing at 1000 ms', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowLog({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      assert.equal(await burst(limiter, clock, 999, 10), 5);
      assert.equal(await burst(limiter, clock, 1000, 10), 0);
      assert.equal(await burst(limiter, clock, 1998, 10), 0);
      assert.equal(await burst(limiter, clock, 1999, 10), 5);
    });

    test('takes a cost above 1: the request waits for as many old permits as it needs', async () => {
      const clock = new VirtualClock();
      const limiter = slidingWindowLog({ limit: 5, windowMs: 1000, ...suite.options(clock) });
      assert.equal((await limiter.acquire('k', 3)).remaining, 2); // t = 0
      await clock.advanceTo(100);
      assert.equal((await limiter.acquire('k', 3)).retryAfterMs, 900);
      assert.equal((await limiter.acquire('k', 2)).allowed, true);
      await clock.advanceTo(500);
      assert.equal((await limiter.acquire('k', 1)).retryAfterMs, 500);
      assert.equal((await limiter.acquire('k', 4)).retryAfterMs, 600); // three of t = 0, one of t = 100
      assert.equal((await limiter.acquire('k', 6)).retryAfterMs, Number.POSITIVE_INFINITY);
      assert.equal((await limiter.acquire('other', 5)).allowed, true);
      await limiter.reset('k');
      assert.equal((await limiter.acquire('k', 5)).allowed, true);
    });
  });
}

describe('the edge burst, side by side on one clock', () => {
  test('fixed window lets 2 × limit through around an edge; the sliding windows do not', async () => {
    const clock = new VirtualClock();
    const limit = 10;
    const windowMs = 1000;
    const limiters = {
      fixed: fixedWindow({ limit, windowMs, clock }),
      log: slidingWindowLog({ limit, windowMs, clock }),
      counter: slidingWindowCounter({ limit, windowMs, clock }),
    };
    const admitted = { fixed: 0, log: 0, counter: 0 };
    for (const at of [999, 1000]) {
      await clock.advanceTo(at);
      for (const name of ['fixed', 'log', 'counter'] as const) {
        for (let i = 0; i < limit; i++) if (limiters[name].tryAcquire('k').allowed) admitted[name]++;
      }
    }
    assert.deepEqual(admitted, { fixed: 2 * limit, log: limit, counter: limit });
  });

  test('the log never admits more than the limit in any window, whatever the arrival pattern', async () => {
    const clock = new VirtualClock();
    const limiter = slidingWindowLog({ limit: 7, windowMs: 100, clock });
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const granted: number[] = [];
    for (let step = 0; step < 5000; step++) {
      await clock.advance(Math.floor(random() * 20));
      const cost = 1 + Math.floor(random() * 3);
      if (limiter.tryAcquire('k', cost).allowed)
        for (let i = 0; i < cost; i++) granted.push(clock.monotonic());
    }
    let busiest = 0;
    for (let first = 0, last = 0; last < granted.length; last++) {
      while (granted[first]! <= granted[last]! - 100) first++;
      busiest = Math.max(busiest, last - first + 1);
    }
    assert.equal(busiest, 7);
    assert.ok(granted.length > 1000);
  });
});

describe('sliding window log options', () => {
  test('are validated', () => {
    assert.throws(() => slidingWindowLog({ limit: 0, windowMs: 1000 }), /limit/);
    assert.throws(() => slidingWindowLog({ limit: 100_001, windowMs: 1000 }), /limit/);
    assert.throws(() => slidingWindowLog({ limit: 1, windowMs: 0 }), /windowMs/);
  });

  test('the memory log grows as permits are granted, up to the limit', () => {
    const clock = new VirtualClock();
    const limiter = slidingWindowLog({ limit: 1000, windowMs: 1000, clock });
    for (let i = 0; i < 1000; i++) assert.equal(limiter.tryAcquire('k').allowed, true);
    assert.equal(limiter.tryAcquire('k').allowed, false);
  });
});
