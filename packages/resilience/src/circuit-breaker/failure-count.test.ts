import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { FailureCountRule } from './failure-count.js';

describe('FailureCountRule', () => {
  const options = { kind: 'failure-count', failures: 3, windowMs: 1000 } as const;

  it('trips when N failures fall within the window, whatever the successes in between', () => {
    const rule = new FailureCountRule(options);
    assert.equal(rule.failure(0), false);
    assert.equal(rule.success(), false);
    assert.equal(rule.failure(400), false);
    assert.equal(rule.failure(800), true);
  });

  it('does not trip on failures spread over more than the window', () => {
    const rule = new FailureCountRule(options);
    assert.equal(rule.failure(0), false);
    assert.equal(rule.failure(600), false);
    assert.equal(rule.failure(1200), false); // the failure at 0 has aged out
    assert.equal(rule.failure(1500), true);
  });

  it('does not read the clock on successes', () => {
    assert.equal(new FailureCountRule(options).timesSuccesses, false);
  });

  it('round-trips its window through export/restore', () => {
    const a = new FailureCountRule(options);
    a.failure(0);
    a.failure(10);
    const b = new FailureCountRule(options);
    b.restoreState(JSON.parse(JSON.stringify(a.exportState(20))), 5020);
    assert.equal(b.failure(5030), true);
    b.restoreState({ kind: 'failure-ratio' }, 0); // another kind: ignored, starts empty
    assert.equal(b.failure(6000), false);
  });

  it('validates its options', () => {
    assert.throws(() => new FailureCountRule({ ...options, failures: 0 }), InvalidOptionsError);
    assert.throws(() => new FailureCountRule({ ...options, windowMs: -5 }), InvalidOptionsError);
    assert.throws(() => new FailureCountRule({ ...options, buckets: 0 }), InvalidOptionsError);
  });
});
