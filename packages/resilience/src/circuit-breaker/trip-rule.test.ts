import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { ConsecutiveFailuresRule } from './consecutive-failures.js';
import { createTripRule, type TripRule, type TripRuleOptions } from './trip-rule.js';

describe('createTripRule', () => {
  it('builds each built-in rule from its kind', () => {
    const kinds: TripRuleOptions[] = [
      { kind: 'consecutive-failures', failures: 1 },
      { kind: 'failure-count', failures: 1, windowMs: 10 },
      { kind: 'failure-ratio', ratio: 1, windowMs: 10, minThroughput: 1 },
      { kind: 'slow-call-ratio', slowCallMs: 0, ratio: 1, windowMs: 10, minThroughput: 1 },
    ];
    for (const options of kinds) {
      const rule = createTripRule(options);
      assert.equal(rule.exportState(0).kind, options.kind);
      assert.equal(rule.failure(0, 1), true, options.kind);
    }
  });

  it('combines an array of rules: each sees every call, any one trips', () => {
    const rule = createTripRule([
      { kind: 'consecutive-failures', failures: 3 },
      { kind: 'slow-call-ratio', slowCallMs: 100, ratio: 1, windowMs: 1000, minThroughput: 2 },
    ]);
    assert.equal(rule.needsDuration, true);
    assert.equal(rule.timesSuccesses, true);
    assert.equal(rule.success(0, 500), false); // slow 1 of 1: below throughput
    assert.equal(rule.success(1, 500), true); // slow 2 of 2
    rule.reset();
    assert.equal(rule.failure(2, 1), false);
    assert.equal(rule.failure(3, 1), false);
    assert.equal(rule.failure(4, 1), true); // the consecutive rule
  });

  it('exports and restores a combination', () => {
    const options: TripRuleOptions[] = [
      { kind: 'consecutive-failures', failures: 2 },
      { kind: 'failure-count', failures: 5, windowMs: 1000 },
    ];
    const a = createTripRule(options);
    a.failure(0, 0);
    const b = createTripRule(options);
    b.restoreState(JSON.parse(JSON.stringify(a.exportState(0))), 0);
    assert.equal(b.failure(1, 0), true);
  });

  it('accepts a factory of a custom rule', () => {
    const custom: TripRule = new ConsecutiveFailuresRule({ kind: 'consecutive-failures', failures: 1 });
    assert.equal(
      createTripRule(() => custom),
      custom,
    );
  });

  it('rejects unknown kinds, empty arrays and non-objects, naming the option', () => {
    assert.throws(
      () => createTripRule({ kind: 'nope' } as unknown as TripRuleOptions),
      (e: unknown) => e instanceof InvalidOptionsError && e.option === 'trip.kind',
    );
    assert.throws(() => createTripRule([]), InvalidOptionsError);
    assert.throws(() => createTripRule(5 as unknown as TripRuleOptions), InvalidOptionsError);
    assert.throws(
      () =>
        createTripRule([
          { kind: 'consecutive-failures', failures: 1 },
          { kind: 'consecutive-failures', failures: 0 },
        ]),
      (e: unknown) => e instanceof InvalidOptionsError && e.option === 'trip[1].failures',
    );
  });
});
