import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sleep } from '@stratus/core';
import { VirtualClock } from './virtual-clock.js';

describe('VirtualClock', () => {
  it('fires timers in due order and moves wall and monotonic time together', async () => {
    const clock = new VirtualClock({ now: 1_000_000 });
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    clock.setTimeout(() => fired.push('a'), 10);
    clock.setTimeout(() => fired.push('c'), 20);
    await clock.advance(15);
    assert.deepEqual(fired, ['a']);
    assert.equal(clock.monotonic(), 15);
    assert.equal(clock.now(), 1_000_015);
    await clock.advance(5);
    assert.deepEqual(fired, ['a', 'b', 'c']);
    assert.equal(clock.pendingTimers, 0);
  });

  it('sees timers scheduled by async code reacting to an earlier timer within one advance', async () => {
    const clock = new VirtualClock();
    const done: number[] = [];
    void (async () => {
      await sleep(clock, 100);
      done.push(clock.monotonic());
      await sleep(clock, 100);
      done.push(clock.monotonic());
    })();
    await clock.advance(250);
    assert.deepEqual(done, [100, 200]);
  });

  it('cleared timers never fire', async () => {
    const clock = new VirtualClock();
    let fired = false;
    const handle = clock.setTimeout(() => {
      fired = true;
    }, 10);
    clock.clearTimeout(handle);
    await clock.runAll();
    assert.equal(fired, false);
  });

  it('sleep rejects at once when its signal aborts', async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const pending = sleep(clock, 1_000, controller.signal);
    controller.abort('stop');
    await assert.rejects(pending, { code: 'ERR_STRATUS_CANCELLED' });
    assert.equal(clock.pendingTimers, 0);
  });
});
