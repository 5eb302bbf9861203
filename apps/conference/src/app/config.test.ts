import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { configFromEnv } from './config.js';

describe('configFromEnv', () => {
  test('defaults: the embedded default on port 3000, its background in a thread of its own', () => {
    const config = configFromEnv({});
    assert.equal(config.role, 'all');
    assert.equal(config.port, 3000);
    assert.equal(config.databaseUrl, undefined);
    assert.equal(config.backgroundThread, true);
    assert.equal(config.leaseMs, 10_000);
  });

  test('reads flags and durations', () => {
    assert.equal(configFromEnv({ BACKGROUND_THREAD: 'false' }).backgroundThread, false);
    assert.equal(configFromEnv({ BACKGROUND_THREAD: '0' }).backgroundThread, false);
    assert.equal(configFromEnv({ BACKGROUND_THREAD: 'on' }).backgroundThread, true);
    assert.equal(configFromEnv({ RESERVATION_WINDOW_SECONDS: '1.5' }).reservationWindowMs, 1500);
  });

  test('refuses bad values with the variable named', () => {
    for (const [name, value] of [
      ['BACKGROUND_THREAD', 'maybe'],
      ['PORT', '70000'],
      ['ROLE', 'boss'],
      ['LOG_LEVEL', 'loud'],
      ['LEASE_SECONDS', '-1'],
      ['DATABASE_POOL_SIZE', '1'],
    ] as const) {
      assert.throws(
        () => configFromEnv({ [name]: value }),
        (error: unknown) => error instanceof InvalidOptionsError && error.message.includes(name),
        `${name}=${value}`,
      );
    }
    assert.throws(() => configFromEnv({ ROLE: 'web' }), /DATABASE_URL/);
  });
});
