import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  constantBackoff,
  decorrelatedJitterBackoff,
  exponentialBackoff,
  immediateBackoff,
  linearBackoff,
} from './backoff.js';
import { InvalidOptionsError } from './errors.js';

function sequence(backoff: { delay(a: number, p: number): number }, n: number): number[] {
  const out: number[] = [];
  let previous = 0;
  for (let attempt = 1; attempt <= n; attempt++) {
    previous = backoff.delay(attempt, previous);
    out.push(previous);
  }
  return out;
}

describe('backoff', () => {
  it('immediate and constant', () => {
    assert.deepEqual(sequence(immediateBackoff(), 3), [0, 0, 0]);
    assert.deepEqual(sequence(constantBackoff(250), 3), [250, 250, 250]);
  });

  it('linear grows by the increment and stops at the cap', () => {
    assert.deepEqual(sequence(linearBackoff({ initialMs: 100 }), 4), [100, 200, 300, 400]);
    assert.deepEqual(
      sequence(linearBackoff({ initialMs: 100, incrementMs: 50, maxMs: 180 }), 4),
      [100, 150, 180, 180],
    );
  });

  it('exponential doubles up to the cap, with exact jitter given a random source', () => {
    assert.deepEqual(
      sequence(exponentialBackoff({ initialMs: 100, maxMs: 1000 }), 6),
      [100, 200, 400, 800, 1000, 1000],
    );
    assert.deepEqual(sequence(exponentialBackoff({ initialMs: 100, factor: 3 }), 3), [100, 300, 900]);
    assert.deepEqual(
      sequence(exponentialBackoff({ initialMs: 100, jitter: 'full', random: () => 0.5 }), 3),
      [50, 100, 200],
    );
    assert.deepEqual(
      sequence(exponentialBackoff({ initialMs: 100, jitter: 'equal', random: () => 0 }), 3),
      [50, 100, 200],
    );
  });

  it('decorrelated jitter stays within [initial, 3·previous] and the cap', () => {
    assert.deepEqual(
      sequence(decorrelatedJitterBackoff({ initialMs: 100, random: () => 1 }), 4),
      [300, 900, 2700, 8100],
    );
    assert.deepEqual(
      sequence(decorrelatedJitterBackoff({ initialMs: 100, maxMs: 1000, random: () => 1 }), 4),
      [300, 900, 1000, 1000],
    );
    assert.deepEqual(
      sequence(decorrelatedJitterBackoff({ initialMs: 100, random: () => 0 }), 3),
      [100, 100, 100],
    );
  });

  it('rejects invalid options with a typed error naming the option', () => {
    assert.throws(
      () => constantBackoff(-1),
      (e: unknown) => e instanceof InvalidOptionsError && e.option === 'delayMs',
    );
    assert.throws(() => exponentialBackoff({ initialMs: 10, factor: 0.5 }), InvalidOptionsError);
    assert.throws(() => exponentialBackoff({ initialMs: 10, jitter: 'most' as never }), InvalidOptionsError);
    assert.throws(() => decorrelatedJitterBackoff({ initialMs: 0 }), InvalidOptionsError);
    assert.throws(() => linearBackoff({ initialMs: Number.NaN }), InvalidOptionsError);
  });
});
