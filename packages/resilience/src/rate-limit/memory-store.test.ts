import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { concurrencyLimit } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { MemoryRateLimitStore } from './memory-store.js';
import { tokenBucket } from './token-bucket.js';

describe('memory store', () => {
  test('drops idle keys as new ones arrive, so memory follows the keys active within a window', async () => {
    const clock = new VirtualClock();
    const limiter = fixedWindow({
      limit: 5,
      windowMs: 1000,
      clock,
      store: new MemoryRateLimitStore({ minSweepSize: 100 }),
    });
    let largest = 0;
    for (let i = 0; i < 20_000; i++) {
      limiter.tryAcquire(`ip-${i}`);
      largest = Math.max(largest, limiter.size);
      if (i % 50 === 49) await clock.advance(1000); // 50 new keys per window
    }
    assert.ok(largest <= 200, `held up to ${largest} keys`);
  });

  test('never drops a key that is not as good as new', async () => {
    const clock = new VirtualClock();
    const limiter = tokenBucket({
      capacity: 2,
      refillRate: 1,
      refillIntervalMs: 60_000,
      clock,
      store: new MemoryRateLimitStore({ minSweepSize: 10 }),
    });
    limiter.tryAcquire('busy', 2);
    for (let i = 0; i < 1000; i++) {
      limiter.tryAcquire(`other-${i}`);
      await clock.advance(10);
    }
    assert.equal(limiter.tryAcquire('busy').allowed, false, 'the empty bucket was kept');
  });

  test('keeps keys holding concurrency leases', () => {
    const clock = new VirtualClock();
    const limiter = concurrencyLimit({
      maxInFlight: 1,
      clock,
      store: new MemoryRateLimitStore({ minSweepSize: 10 }),
    });
    assert.equal(limiter.tryAcquire('held').allowed, true);
    for (let i = 0; i < 100; i++) void limiter.tryAcquire(`other-${i}`).lease?.release();
    assert.equal(limiter.tryAcquire('held').allowed, false);
  });

  test('validates its options', () => {
    assert.throws(() => new MemoryRateLimitStore({ minSweepSize: 0 }), /minSweepSize/);
    assert.throws(() => fixedWindow({ limit: 1, windowMs: 1, store: {} as never }), /store/);
  });
});
