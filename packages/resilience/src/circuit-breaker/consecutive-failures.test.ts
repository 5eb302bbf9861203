import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { ConsecutiveFailuresRule } from './consecutive-failures.js';

describe('ConsecutiveFailuresRule', () => {
  it('trips on the N-th failure in a row, not before', () => {
    const rule = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 3 });
    assert.equal(rule.failure(), false);
    assert.equal(rule.failure(), false);
    assert.equal(rule.failure(), true);
  });

  it('starts again after a success', () => {
    const rule = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 2 });
    rule.failure();
    rule.success();
    assert.equal(rule.failure(), false);
    assert.equal(rule.failure(), true);
  });

  it('needs no clock', () => {
    const rule = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 1 });
    assert.equal(rule.timesSuccesses, false);
    assert.equal(rule.needsDuration, false);
  });

  it('exports and restores its count', () => {
    const a = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 3 });
    a.failure();
    a.failure();
    const b = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 3 });
    b.restoreState(a.exportState());
    assert.equal(b.failure(), true);
    b.reset();
    assert.equal(b.failure(), false);
  });

  it('rejects a threshold that is not a positive integer', () => {
    for (const failures of [0, -1, 1.5, Number.NaN]) {
      assert.throws(
        () => new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures }),
        InvalidOptionsError,
      );
    }
  });
});
