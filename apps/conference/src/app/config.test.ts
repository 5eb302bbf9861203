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

  test('the abuse limits: on by default, each configurable, all off with RATE_LIMITS=off', () => {
    assert.deepEqual(configFromEnv({}).abuseLimits, {
      signIn: { limit: 10, windowMs: 60_000 },
      orderLookup: { limit: 10, windowMs: 60_000 },
      orders: { limit: 10, windowMs: 60_000 },
      conferences: { limit: 10, windowMs: 3_600_000 },
      webhookFailures: { limit: 10, windowMs: 60_000 },
      lockoutAfter: 5,
      lockoutMs: 60_000,
      openOrdersPerClient: 5,
      heldSeatsPerClient: 50,
    });
    const tuned = configFromEnv({
      RATE_LIMIT_SIGN_IN: '3/30',
      RATE_LIMIT_WEBHOOK_FAILURES: '20/10',
      LOCKOUT_AFTER: '8',
      LOCKOUT_SECONDS: '120',
      MAX_OPEN_ORDERS_PER_CLIENT: '2',
      MAX_HELD_SEATS_PER_CLIENT: '100',
    }).abuseLimits;
    assert.deepEqual(tuned?.signIn, { limit: 3, windowMs: 30_000 });
    assert.deepEqual(tuned?.webhookFailures, { limit: 20, windowMs: 10_000 });
    assert.equal(tuned?.lockoutAfter, 8);
    assert.equal(tuned?.lockoutMs, 120_000);
    assert.equal(tuned?.openOrdersPerClient, 2);
    assert.equal(tuned?.heldSeatsPerClient, 100);
    assert.equal(configFromEnv({ RATE_LIMITS: 'off' }).abuseLimits, undefined);
    assert.equal(configFromEnv({}).trustProxy, false);
    assert.equal(configFromEnv({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(configFromEnv({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1');
  });

  test('refuses bad values with the variable named', () => {
    for (const [name, value] of [
      ['BACKGROUND_THREAD', 'maybe'],
      ['PORT', '70000'],
      ['ROLE', 'boss'],
      ['LOG_LEVEL', 'loud'],
      ['LEASE_SECONDS', '-1'],
      ['DATABASE_POOL_SIZE', '1'],
      ['RATE_LIMITS', 'sometimes'],
      ['RATE_LIMIT_SIGN_IN', '10'],
      ['RATE_LIMIT_ORDERS', '0/60'],
      ['RATE_LIMIT_CONFERENCES', '5/0'],
      ['LOCKOUT_AFTER', '0'],
      ['LOCKOUT_SECONDS', 'soon'],
      ['MAX_OPEN_ORDERS_PER_CLIENT', '1.5'],
      ['MAX_HELD_SEATS_PER_CLIENT', '-3'],
      ['TRUST_PROXY', 'everyone'],
      ['WORKER_PORT', '-1'],
      ['OWNER_TOKEN_SECRET', 'too short'],
      ['METRICS_TOKEN', 'x'.repeat(31)],
      ['METRICS_TOKEN', `${'x'.repeat(32)} y`],
      ['HEADERS_TIMEOUT_SECONDS', '31'],
      ['KEEP_ALIVE_TIMEOUT_SECONDS', '0'],
    ] as const) {
      assert.throws(
        () => configFromEnv({ [name]: value }),
        (error: unknown) => error instanceof InvalidOptionsError && error.message.includes(name),
        `${name}=${value}`,
      );
    }
    assert.throws(() => configFromEnv({ ROLE: 'web' }), /DATABASE_URL/);
  });

  test('scaled out, every web process needs the same OWNER_TOKEN_SECRET; workers do not', () => {
    const database = { DATABASE_URL: 'postgres://db/conference' };
    const secret = 'a'.repeat(32);
    for (const env of [
      { ...database, ROLE: 'web' },
      { ...database, ROLE: 'all' },
    ]) {
      assert.throws(
        () => configFromEnv(env),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === 'OWNER_TOKEN_SECRET',
        JSON.stringify(env),
      );
      assert.equal(configFromEnv({ ...env, OWNER_TOKEN_SECRET: secret }).ownerTokenSecret, secret);
    }
    assert.equal(configFromEnv({ ...database, ROLE: 'worker' }).ownerTokenSecret, undefined);
    assert.equal(configFromEnv({}).ownerTokenSecret, undefined, 'the embedded default keeps one of its own');
  });

  test('server timeouts and the worker port have defaults and can be set', () => {
    const defaults = configFromEnv({});
    assert.deepEqual(
      [
        defaults.requestTimeoutMs,
        defaults.headersTimeoutMs,
        defaults.keepAliveTimeoutMs,
        defaults.workerPort,
      ],
      [30_000, 10_000, 72_000, 0],
    );
    const set = configFromEnv({
      REQUEST_TIMEOUT_SECONDS: '20',
      HEADERS_TIMEOUT_SECONDS: '5',
      KEEP_ALIVE_TIMEOUT_SECONDS: '65',
      WORKER_PORT: '4000',
    });
    assert.deepEqual(
      [set.requestTimeoutMs, set.headersTimeoutMs, set.keepAliveTimeoutMs, set.workerPort],
      [20_000, 5_000, 65_000, 4000],
    );
  });
});
