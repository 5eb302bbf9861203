import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { LatencyWindow } from './latency-window.js';

describe('LatencyWindow', () => {
  it('answers nearest-rank percentiles', () => {
    const window = new LatencyWindow(100, 1);
    assert.equal(window.percentile(0.5), undefined);
    for (const ms of [50, 10, 40, 20, 30]) window.record(ms);
    assert.equal(window.size, 5);
    assert.equal(window.percentile(0.2), 10);
    assert.equal(window.percentile(0.5), 30);
    assert.equal(window.percentile(0.9), 50);
    assert.equal(window.percentile(1), 50);
    assert.equal(window.percentile(0.01), 10);
  });

  it('keeps only the most recent samples', () => {
    const window = new LatencyWindow(4, 1);
    for (const ms of [1000, 1000, 1, 2, 3, 4]) window.record(ms);
    assert.equal(window.size, 4);
    assert.equal(window.percentile(1), 4);
  });

  it('re-sorts only after refreshEvery new samples', () => {
    const window = new LatencyWindow(8, 4);
    window.record(10);
    assert.equal(window.percentile(1), 10);
    for (const ms of [20, 30, 40]) window.record(ms);
    assert.equal(window.percentile(1), 10, 'three samples later the cached order is still used');
    window.record(50);
    assert.equal(window.percentile(1), 50);
  });

  it('validates its arguments', () => {
    assert.throws(() => new LatencyWindow(0), InvalidOptionsError);
    assert.throws(() => new LatencyWindow(10, 0), InvalidOptionsError);
    assert.throws(() => new LatencyWindow(10).percentile(0), InvalidOptionsError);
  });
});
