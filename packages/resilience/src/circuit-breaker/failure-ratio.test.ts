import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { FailureRatioRule } from './failure-ratio.js';

describe('FailureRatioRule', () => {
  const options = { kind: 'failure-ratio', ratio: 0.5, windowMs: 1000, minThroughput: 4 } as const;

  it('trips when the failure ratio reaches the threshold with enough calls', () => {
    const rule = new FailureRatioRule(options);
    rule.success(0);
    rule.success(10);
    assert.equal(rule.failure(20), false); // 1 of 3: below throughput anyway
    assert.equal(rule.failure(30), true); // 2 of 4 = 0.5
  });

  it('waits for the minimum throughput', () => {
    const rule = new FailureRatioRule(options);
    assert.equal(rule.failure(0), false);
    assert.equal(rule.failure(1), false);
    assert.equal(rule.failure(2), false);
    assert.equal(rule.failure(3), true); // 4 of 4
  });

  it('stays closed while the ratio is below the threshold', () => {
    const rule = new FailureRatioRule(options);
    for (let t = 0; t < 100; t++) {
      rule.success(t * 5);
      rule.success(t * 5 + 1);
      assert.equal(rule.failure(t * 5 + 2), false); // one in three
    }
  });

  it('forgets calls that left the sampling window', () => {
    const rule = new FailureRatioRule(options);
    rule.failure(0);
    rule.failure(0);
    rule.failure(0);
    assert.equal(rule.failure(1000), false); // the three above aged out: 1 of 1, below throughput
  });

  it('defaults the minimum throughput to 10', () => {
    const rule = new FailureRatioRule({ kind: 'failure-ratio', ratio: 1, windowMs: 1000 });
    for (let i = 0; i < 9; i++) assert.equal(rule.failure(i), false);
    assert.equal(rule.failure(9), true);
  });

  it('validates its options', () => {
    assert.throws(() => new FailureRatioRule({ ...options, ratio: 0 }), InvalidOptionsError);
    assert.throws(() => new FailureRatioRule({ ...options, ratio: 1.1 }), InvalidOptionsError);
    assert.throws(() => new FailureRatioRule({ ...options, minThroughput: 0 }), InvalidOptionsError);
    assert.throws(() => new FailureRatioRule({ ...options, windowMs: 0 }), InvalidOptionsError);
  });
});
