import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoreFailures } from './store-failures.js';

describe('StoreFailures', () => {
  it('waits longer after each failure, up to 5 s, and starts over after a success', () => {
    const failures = new StoreFailures();
    const waits = Array.from({ length: 10 }, () => failures.failed());
    assert.equal(failures.count, 10);
    // Equal jitter: between half and all of 100 ms · 2^(n-1), capped at 5 s.
    waits.forEach((wait, i) => {
      const full = Math.min(5_000, 100 * 2 ** i);
      assert.ok(wait >= full / 2 && wait <= full, `failure ${i + 1}: ${wait} ms`);
    });
    failures.succeeded();
    assert.equal(failures.count, 0);
    assert.ok(failures.failed() <= 100);
  });
});
