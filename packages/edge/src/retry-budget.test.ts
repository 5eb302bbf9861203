import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { RetryBudget } from './retry-budget.js';

describe('RetryBudget', () => {
  it('allows ratio × requests plus a floor over a sliding ten seconds', async () => {
    const clock = new VirtualClock();
    const budget = new RetryBudget(0.2, 1, clock);
    for (let i = 0; i < 50; i++) budget.request();
    // 0.2 × 50 + 1 × 10 = 20 retries.
    let granted = 0;
    while (budget.tryRetry()) granted += 1;
    assert.equal(granted, 20);
    await clock.advance(5_000);
    assert.equal(budget.tryRetry(), false);
    // Ten seconds after the first second, its requests and retries have left the window.
    await clock.advance(5_000);
    assert.equal(budget.tryRetry(), true);
  });
});
