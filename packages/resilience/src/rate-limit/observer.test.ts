import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { fixedWindow } from './fixed-window.js';
import { storeSuites } from './fixtures/store-suites.js';
import { tokenBucket } from './token-bucket.js';
import type { RateLimiterEvent } from './types.js';

/** "type key usage" lines, for compact assertions. */
function describeEvent(event: RateLimiterEvent): string {
  if (event.type === 'limited') return `limited ${event.key} retry=${event.retryAfterMs}`;
  return `${event.type} ${event.key} usage=${event.usage}`;
}

const suites = await storeSuites('rate-limit-soft-limit');

for (const suite of suites) {
  describe(`soft limit on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('engages once when usage reaches the threshold and clears when it falls back', async () => {
      const clock = new VirtualClock();
      const hook: string[] = [];
      const limiter = fixedWindow({
        limit: 10,
        windowMs: 1000,
        ...suite.options(clock),
        softLimit: { threshold: 0.8, onChange: (event) => hook.push(describeEvent(event)) },
      });
      const events: string[] = [];
      limiter.events.on((event) => events.push(describeEvent(event)));
      for (let i = 0; i < 7; i++) await limiter.acquire('tenant');
      assert.deepEqual(events, []);
      await limiter.acquire('tenant'); // 8 of 10
      assert.deepEqual(events, ['soft-limit tenant usage=0.8']);
      for (let i = 0; i < 3; i++) await limiter.acquire('tenant');
      assert.deepEqual(events, ['soft-limit tenant usage=0.8', 'limited tenant retry=1000']);
      await limiter.acquire('other'); // other keys are not affected
      // The window ends: the quota is full again, so the soft limit clears then, even with no request.
      await clock.advance(1000);
      await limiter.acquire('tenant');
      const expected = [
        'soft-limit tenant usage=0.8',
        'limited tenant retry=1000',
        'soft-limit-cleared tenant usage=0',
      ];
      assert.deepEqual(events, expected);
      assert.deepEqual(hook, [expected[0], expected[2]]);
    });
  });
}

describe('soft limit', () => {
  test('clears only below clearBelow (hysteresis), so features do not flap at the threshold', async () => {
    const clock = new VirtualClock();
    const changes: string[] = [];
    const limiter = tokenBucket({
      capacity: 10,
      refillRate: 1,
      refillIntervalMs: 100,
      clock,
      softLimit: { threshold: 0.8, clearBelow: 0.5, onChange: (event) => changes.push(describeEvent(event)) },
    });
    limiter.tryAcquire('k', 8);
    assert.deepEqual(changes, ['soft-limit k usage=0.8']);
    await clock.advance(100);
    limiter.tryAcquire('k', 0); // usage 0.7: below the threshold, not below clearBelow
    await clock.advance(200);
    limiter.tryAcquire('k', 0); // usage 0.5
    assert.equal(changes.length, 1);
    await clock.advance(100);
    limiter.tryAcquire('k', 0); // usage 0.4
    assert.deepEqual(changes, ['soft-limit k usage=0.8', 'soft-limit-cleared k usage=0.4']);
  });

  test('a key that goes quiet is cleared when its quota is full again, without another request', async () => {
    const clock = new VirtualClock();
    const changes: string[] = [];
    const limiter = fixedWindow({
      limit: 4,
      windowMs: 1000,
      clock,
      softLimit: {
        threshold: 0.5,
        onChange: (event) => changes.push(`${describeEvent(event)}@${clock.monotonic()}`),
      },
    });
    await clock.advance(100);
    limiter.tryAcquire('k');
    limiter.tryAcquire('k');
    await clock.advance(500);
    limiter.tryAcquire('k'); // still engaged: the timer must now wait for the later reset
    await clock.advance(2000);
    assert.deepEqual(changes, ['soft-limit k usage=0.5@100', 'soft-limit-cleared k usage=0@1000']);
    assert.equal(clock.pendingTimers, 0);
  });

  test('reset(key) clears it, and a throwing hook never fails the request', async () => {
    const clock = new VirtualClock();
    const events: string[] = [];
    const limiter = fixedWindow({
      limit: 2,
      windowMs: 1000,
      clock,
      softLimit: {
        threshold: 0.5,
        onChange: () => {
          throw new Error('broken hook');
        },
      },
    });
    limiter.events.on((event) => events.push(describeEvent(event)));
    const warned = new Promise((resolve) => process.once('warning', resolve));
    assert.equal(limiter.tryAcquire('k').allowed, true);
    assert.match(String(await warned), /broken hook/);
    await limiter.reset('k');
    assert.deepEqual(events, ['soft-limit k usage=0.5', 'soft-limit-cleared k usage=0']);
  });

  test('options are validated', () => {
    const base = { limit: 1, windowMs: 1000 };
    assert.throws(() => fixedWindow({ ...base, softLimit: { threshold: 0 } }), InvalidOptionsError);
    assert.throws(() => fixedWindow({ ...base, softLimit: { threshold: 1.2 } }), /softLimit.threshold/);
    assert.throws(
      () => fixedWindow({ ...base, softLimit: { threshold: 0.5, clearBelow: 0.6 } }),
      /clearBelow/,
    );
    assert.throws(
      () => fixedWindow({ ...base, softLimit: { threshold: 0.5, onChange: 1 as never } }),
      /onChange/,
    );
  });
});
