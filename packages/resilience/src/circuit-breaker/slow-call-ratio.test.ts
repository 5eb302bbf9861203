import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { SlowCallRatioRule } from './slow-call-ratio.js';

describe('SlowCallRatioRule', () => {
  const options = {
    kind: 'slow-call-ratio',
    slowCallMs: 100,
    ratio: 0.5,
    windowMs: 10_000,
    minThroughput: 4,
  } as const;

  it('asks the breaker for call durations', () => {
    assert.equal(new SlowCallRatioRule(options).needsDuration, true);
  });

  it('trips when slow calls reach the ratio, even if they all succeeded', () => {
    const rule = new SlowCallRatioRule(options);
    assert.equal(rule.success(0, 10), false);
    assert.equal(rule.success(1, 20), false);
    assert.equal(rule.success(2, 150), false); // 1 slow of 3
    assert.equal(rule.success(3, 101), true); // 2 slow of 4
  });

  it('counts slow failures as slow calls too', () => {
    const rule = new SlowCallRatioRule(options);
    rule.success(0, 1);
    rule.failure(1, 1);
    rule.failure(2, 500);
    assert.equal(rule.failure(3, 500), true);
  });

  it('treats a call exactly at the threshold as not slow', () => {
    const rule = new SlowCallRatioRule({ ...options, minThroughput: 1, ratio: 1 });
    assert.equal(rule.success(0, 100), false);
    assert.equal(rule.success(1, 100.5), false); // 1 slow of 2
  });

  it('validates its options', () => {
    assert.throws(() => new SlowCallRatioRule({ ...options, slowCallMs: -1 }), InvalidOptionsError);
    assert.throws(() => new SlowCallRatioRule({ ...options, ratio: 0 }), InvalidOptionsError);
    assert.throws(() => new SlowCallRatioRule({ ...options, minThroughput: 0 }), InvalidOptionsError);
  });
});
