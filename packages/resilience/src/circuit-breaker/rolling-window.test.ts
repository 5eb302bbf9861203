import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { RollingWindow } from './rolling-window.js';

describe('RollingWindow', () => {
  it('counts calls, failures and slow calls within the window', () => {
    const window = new RollingWindow({ windowMs: 1000, buckets: 10 });
    window.record(0, false, false);
    window.record(50, true, false);
    window.record(950, true, true);
    assert.deepEqual(window.totals, { calls: 3, failures: 2, slow: 1 });
  });

  it('ages counts out one bucket at a time', () => {
    const window = new RollingWindow({ windowMs: 1000, buckets: 10 });
    window.record(0, true, false); // bucket [0, 100)
    window.record(150, true, false); // bucket [100, 200)
    window.refresh(999);
    assert.equal(window.totals.failures, 2);
    window.refresh(1000); // bucket [0, 100) falls out
    assert.equal(window.totals.failures, 1);
    window.refresh(1100);
    assert.equal(window.totals.failures, 0);
  });

  it('clears everything after a gap longer than the window', () => {
    const window = new RollingWindow({ windowMs: 1000, buckets: 4 });
    for (let t = 0; t < 1000; t += 10) window.record(t, true, true);
    window.refresh(5000);
    assert.deepEqual(window.totals, { calls: 0, failures: 0, slow: 0 });
    window.record(5001, false, false);
    assert.deepEqual(window.totals, { calls: 1, failures: 0, slow: 0 });
  });

  it('uses constant memory however many calls are recorded', () => {
    const window = new RollingWindow({ windowMs: 100, buckets: 5 });
    for (let t = 0; t < 100_000; t++) window.record(t / 10, t % 2 === 0, false);
    // Only the last 100 ms (1000 calls at 10 per ms) are in the window.
    assert.equal(window.totals.calls, 1000);
    assert.equal(window.totals.failures, 500);
  });

  it('exports and restores bucket counts relative to the current time', () => {
    const a = new RollingWindow({ windowMs: 1000, buckets: 10 });
    a.record(0, true, false);
    a.record(500, true, true);
    a.record(900, false, false);
    const state = a.exportState(950);
    const b = new RollingWindow({ windowMs: 1000, buckets: 10 });
    b.restoreState(JSON.parse(JSON.stringify(state)), 10_050); // same shape, 9100 ms later on another clock
    assert.deepEqual(b.totals, { calls: 3, failures: 2, slow: 1 });
    b.refresh(10_100); // the oldest bucket (the call at 0) ages out as it would have in `a`
    assert.deepEqual(b.totals, { calls: 2, failures: 1, slow: 1 });
  });

  it('ignores a state of another shape', () => {
    const a = new RollingWindow({ windowMs: 1000, buckets: 10 });
    a.record(0, true, false);
    const b = new RollingWindow({ windowMs: 1000, buckets: 5 });
    b.restoreState(a.exportState(0), 0);
    assert.equal(b.totals.calls, 0);
  });

  it('handles monotonic times below zero', () => {
    const window = new RollingWindow({ windowMs: 100, buckets: 10 });
    window.record(-55, true, false);
    window.record(-5, true, false);
    assert.equal(window.totals.failures, 2);
    window.refresh(50);
    assert.equal(window.totals.failures, 1);
  });

  it('validates its options', () => {
    assert.throws(() => new RollingWindow({ windowMs: 0 }), InvalidOptionsError);
    assert.throws(() => new RollingWindow({ windowMs: -1 }), InvalidOptionsError);
    assert.throws(() => new RollingWindow({ windowMs: 100, buckets: 0 }), InvalidOptionsError);
    assert.throws(() => new RollingWindow({ windowMs: 100, buckets: 1.5 }), InvalidOptionsError);
  });
});
