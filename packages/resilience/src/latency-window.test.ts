import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { LatencyWindow } from './latency-window.js';

describe('LatencyWindow', () => {
  it('answers nearest-rank percentiles', () => {
    const window = new LatencyWindow(100);
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
    const window = new LatencyWindow(4);
    for (const ms of [1000, 1000, 1, 2, 3, 4]) window.record(ms);
    assert.equal(window.size, 4);
    assert.equal(window.percentile(1), 4);
  });

  it('matches a sort of the most recent samples after every record', () => {
    const window = new LatencyWindow(32);
    const recent: number[] = [];
    let seed = 42;
    for (let i = 0; i < 2_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      const ms = seed % 97; // many duplicates, to exercise ties
      window.record(ms);
      recent.push(ms);
      if (recent.length > 32) recent.shift();
      const sorted = [...recent].sort((a, b) => a - b);
      for (const p of [0.01, 0.5, 0.9, 0.99, 1]) {
        assert.equal(window.percentile(p), sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]);
      }
    }
  });

  it('ignores non-finite samples', () => {
    const window = new LatencyWindow(4);
    window.record(Number.NaN);
    window.record(Number.POSITIVE_INFINITY);
    window.record(5);
    assert.equal(window.size, 1);
    assert.equal(window.percentile(1), 5);
  });

  it('validates its arguments', () => {
    assert.throws(() => new LatencyWindow(0), InvalidOptionsError);
    assert.throws(() => new LatencyWindow(2.5), InvalidOptionsError);
    assert.throws(() => new LatencyWindow(10).percentile(0), InvalidOptionsError);
  });
});
