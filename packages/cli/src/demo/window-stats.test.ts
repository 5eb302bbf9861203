import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { percentile, WindowStats } from './window-stats.js';

describe('demo window stats', () => {
  it('nearest-rank percentiles', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i + 1);
    assert.equal(percentile(sorted, 0.5), 50);
    assert.equal(percentile(sorted, 0.99), 99);
    assert.equal(percentile([7], 0.99), 7);
    assert.equal(percentile([], 0.5), undefined);
  });

  it('counts per window and in total, and rolls over', () => {
    const stats = new WindowStats(0);
    stats.record('ok', 10);
    stats.record('ok', 30);
    stats.record('timeout', 250);
    stats.recordRetry();
    const first = stats.roll(2_000);
    assert.deepEqual(first.counts, { ok: 2, failed: 0, timeout: 1, 'broken-circuit': 0, throttled: 0 });
    assert.equal(first.callsPerSecond, 1.5);
    assert.equal(first.retries, 1);
    assert.equal(first.p50Ms, 10);
    assert.equal(first.p99Ms, 30);
    stats.record('broken-circuit', 0);
    const second = stats.roll(3_000);
    assert.equal(second.counts.ok, 0);
    assert.equal(second.p50Ms, undefined);
    assert.equal(stats.totals.ok, 2);
    assert.equal(stats.totals['broken-circuit'], 1);
    assert.equal(stats.totalRetries, 1);
  });
});
