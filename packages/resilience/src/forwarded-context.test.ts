import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isCancelled, neverAbortedSignal, remainingMs } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { ForwardedContext } from './forwarded-context.js';
import { timeout } from './timeout.js';

describe('forwarded contexts', () => {
  it('follows a lazy outer signal without creating it', async () => {
    const clock = new VirtualClock();
    const outer = timeout({ timeoutMs: 100, clock });
    const caller = new AbortController();
    await outer.execute(async (timeoutContext) => {
      const context = new ForwardedContext(timeoutContext, 2);
      assert.equal(context.attempt, 2);
      assert.equal(remainingMs(context), 100);
      assert.equal(isCancelled(context), false);
      assert.equal(context.signal, timeoutContext.signal, 'reading it gives the outer signal itself');
    });
    const cancelled = new ForwardedContext({ signal: caller.signal }, 1);
    caller.abort('stop');
    assert.equal(cancelled.cancelled, true);
    assert.equal(cancelled.cancelReason, 'stop');
    assert.equal(new ForwardedContext(undefined, 1).signal, neverAbortedSignal);
  });
});
