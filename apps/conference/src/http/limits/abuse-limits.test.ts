import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryRateLimitStore } from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';
import { abuseLimitsFromEnv } from '../../app/abuse-settings.js';
import { InvalidOperationError } from '../../domain/errors.js';
import { AbuseLimits } from './abuse-limits.js';
import { TooManyRequestsError } from './too-many-requests.js';

const HOLD_MS = 15 * 60_000;

function limits(env: Record<string, string> = {}) {
  const clock = new VirtualClock({ now: Date.UTC(2027, 0, 1) });
  const settings = abuseLimitsFromEnv(env);
  const store = new MemoryRateLimitStore();
  return { clock, limits: new AbuseLimits(settings, { store, clock, holdWindowMs: HOLD_MS }) };
}

/** Asserts a 429 refusal and answers its Retry-After in seconds. */
async function refused(attempt: Promise<unknown>): Promise<number> {
  const error = await attempt.then(
    () => assert.fail('expected a refusal'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof TooManyRequestsError, String(error));
  assert.equal(error.statusCode, 429);
  assert.match(error.message, /Try again in \d+ (seconds?|minutes)\.$/);
  for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Policy', 'RateLimit'])
    assert.ok(error.headers[name] !== undefined, `${name} in ${JSON.stringify(error.headers)}`);
  const retryAfter = Number(error.headers['Retry-After']);
  assert.ok(retryAfter >= 1, `Retry-After ${error.headers['Retry-After']}`);
  return retryAfter;
}

const right = async () => 'conference-1';
const wrong = async () => undefined;

describe('request rates per client', () => {
  test('N requests in the window pass with their RateLimit fields, the next is refused until the window moves on', async () => {
    const { clock, limits: subject } = limits({ RATE_LIMIT_SIGN_IN: '3/60' });
    for (let i = 0; i < 3; i++) {
      const headers = await subject.charge('signIn', '10.0.0.1');
      assert.equal(headers['RateLimit-Remaining'], String(2 - i));
      assert.equal(headers['RateLimit-Policy'], '"sign-in";q=3;w=60');
    }
    assert.equal(await refused(subject.charge('signIn', '10.0.0.1')), 60);
    // Per client, and per kind of request.
    await subject.charge('signIn', '10.0.0.2');
    await subject.charge('orderLookup', '10.0.0.1');
    await clock.advance(60_000);
    await subject.charge('signIn', '10.0.0.1');
  });

  test('the defaults limit every kind', async () => {
    const { limits: subject } = limits();
    for (const [kind, limit] of [
      ['signIn', 10],
      ['orderLookup', 10],
      ['orders', 10],
      ['conferences', 10],
    ] as const) {
      for (let i = 0; i < limit; i++) await subject.charge(kind, 'client');
      await refused(subject.charge(kind, 'client'));
    }
  });
});

describe('the lockout after wrong access codes', () => {
  test('5 wrong codes lock the conference: even its right code waits for the lockout, then gets in', async () => {
    const { clock, limits: subject } = limits();
    for (let i = 0; i < 5; i++)
      assert.equal(await subject.checkCode('conference c1', `attacker-${i}`, wrong), undefined);
    // Every try came from another client: the conference's own count locks it.
    const retryAfter = await refused(subject.checkCode('conference c1', 'owner', right));
    assert.equal(retryAfter, 60);
    let checked = false;
    await refused(
      subject.checkCode('conference c1', 'owner', async () => {
        checked = true;
        return 'conference-1';
      }),
    );
    assert.equal(checked, false, 'a locked conference checks no code');
    await clock.advance(60_000);
    assert.equal(await subject.checkCode('conference c1', 'owner', right), 'conference-1');
    // The right code cleared the conference's count: one more wrong code does not lock it again.
    await subject.checkCode('conference c1', 'attacker-9', wrong);
    assert.equal(await subject.checkCode('conference c1', 'owner', right), 'conference-1');
  });

  test('one client trying codes across many conferences is locked out too', async () => {
    const { limits: subject } = limits();
    for (let i = 0; i < 5; i++) await subject.checkCode(`conference c${i}`, 'attacker', wrong);
    await refused(subject.checkCode('conference other', 'attacker', right));
    // Others are not.
    assert.equal(await subject.checkCode('conference other', 'owner', right), 'conference-1');
  });

  test('the lockout backs off: later ones last about eight times longer', async () => {
    const { clock, limits: subject } = limits({ LOCKOUT_AFTER: '2', LOCKOUT_SECONDS: '10' });
    let clients = 0;
    const burst = async () => {
      for (let i = 0; i < 2; i++) await subject.checkCode('email a@b.c', `client-${++clients}`, wrong);
    };
    await burst();
    assert.equal(await refused(subject.checkCode('email a@b.c', 'x', right)), 10);
    await clock.advance(10_000);
    await burst();
    // 4 wrong codes within 80 s: locked until the first of them is 80 s old.
    assert.equal(await refused(subject.checkCode('email a@b.c', 'x', right)), 70);
    await clock.advance(70_000);
    await burst();
    await clock.advance(10_000);
    await burst();
    // 8 wrong codes within 640 s: locked until the first is 640 s old.
    const third = await refused(subject.checkCode('email a@b.c', 'x', right));
    assert.ok(third > 500, `locked ${third} s`);
    await clock.advance(third * 1000);
    assert.equal(await subject.checkCode('email a@b.c', 'x', right), 'conference-1');
  });
});

describe('caps on what one client holds of a conference', () => {
  test('at most N orders within the reservation window; other clients and conferences are not held back', async () => {
    const { clock, limits: subject } = limits({ MAX_OPEN_ORDERS_PER_CLIENT: '2' });
    await subject.hold('c1', 'hoarder', 1, 20);
    await subject.hold('c1', 'hoarder', 1, 20);
    const error = await subject.hold('c1', 'hoarder', 1, 1).catch((caught: unknown) => caught);
    assert.ok(error instanceof TooManyRequestsError);
    assert.match(
      error.message,
      /^At most 2 orders of this conference can be placed from one client within 15 minutes/,
    );
    assert.equal(error.headers['Retry-After'], String(15 * 60));
    await subject.hold('c1', 'someone else', 1, 1);
    await subject.hold('c2', 'hoarder', 1, 1);
    await clock.advance(HOLD_MS);
    await subject.hold('c1', 'hoarder', 1, 1);
  });

  test('at most M seats within the reservation window, new orders and added seats alike', async () => {
    const { limits: subject } = limits({ MAX_HELD_SEATS_PER_CLIENT: '30' });
    await subject.hold('c1', 'hoarder', 1, 20);
    // Changing an order takes only the seats it adds.
    await subject.hold('c1', 'hoarder', 0, 10);
    await refused(subject.hold('c1', 'hoarder', 0, 1));
    await refused(subject.hold('c1', 'hoarder', 1, 1));
    // A refusal over seats took no order: one seat fits once seats are free (another client here).
    await subject.hold('c1', 'other', 1, 30);
    await assert.rejects(subject.hold('c1', 'other', 1, 31), InvalidOperationError);
  });
});

test('RATE_LIMITS=off switches every abuse limit off', async () => {
  const { limits: subject } = limits({ RATE_LIMITS: 'off', RATE_LIMIT_SIGN_IN: '1/60' });
  for (let i = 0; i < 100; i++) {
    assert.deepEqual(await subject.charge('signIn', 'client'), {});
    assert.equal(await subject.checkCode('conference c1', 'client', wrong), undefined);
    await subject.hold('c1', 'client', 1, 20);
  }
  assert.equal(await subject.checkCode('conference c1', 'client', right), 'conference-1');
});
