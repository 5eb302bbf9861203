import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS, systemClock } from './clock.js';

describe('systemClock', () => {
  it('waits delays longer than Node timers hold instead of firing after 1 ms', async () => {
    let fired = false;
    const handle = systemClock.setTimeout(() => {
      fired = true;
    }, MAX_TIMER_MS + 1_000);
    // Node fires an overlong setTimeout after 1 ms: give it far more than that, through a real timer.
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(fired, false);
    systemClock.clearTimeout(handle);
  });

  it('cancels a long delay, leaving no timer behind', () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const handle = systemClock.setTimeout(() => assert.fail('cancelled timer fired'), MAX_TIMER_MS * 3);
    systemClock.clearTimeout(handle);
    const after = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    assert.equal(after, before);
  });

  it('fires ordinary delays as setTimeout does', async () => {
    const fired = await new Promise<boolean>((resolve) => systemClock.setTimeout(() => resolve(true), 1));
    assert.equal(fired, true);
  });
});
