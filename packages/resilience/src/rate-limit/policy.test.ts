import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EventEmitter, InvalidOptionsError, OperationCancelledError } from '@stratus/core';
import { flushMicrotasks, VirtualClock, waitUntil } from '@stratus/testkit';
import { RateLimitedError } from '../errors.js';
import { concurrencyLimit } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { storeSuites } from './fixtures/store-suites.js';
import { rateLimit } from './policy.js';
import { tokenBucket } from './token-bucket.js';
import type { RateLimiter, RateLimiterEvent, RateLimitResult } from './types.js';

const value = async () => 42;

/** A promise with its settle functions, for operations the test finishes by hand. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('rateLimit policy', () => {
  test('runs calls while permits last, then rejects with RateLimitedError without running them', async () => {
    const clock = new VirtualClock();
    const policy = rateLimit({ limiter: fixedWindow({ limit: 2, windowMs: 1000, clock }), clock });
    let runs = 0;
    const operation = async () => ++runs;
    assert.equal(await policy.execute(operation), 1);
    assert.equal(await policy.execute(operation), 2);
    await clock.advance(250);
    const error = await policy.execute(operation).then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.code, 'ERR_STRATUS_RATE_LIMITED');
    assert.equal(error.key, 'default');
    assert.equal(error.retryAfterMs, 750);
    assert.equal(error.limit, 2);
    assert.equal(runs, 2);
  });

  test('charges the key and cost of each call, from the call options or from functions', async () => {
    const clock = new VirtualClock();
    const limiter = fixedWindow({ limit: 3, windowMs: 1000, clock });
    const byOption = rateLimit({ limiter, clock });
    assert.equal(await byOption.execute(value, { key: 'tenant-a', cost: 3 }), 42);
    await assert.rejects(byOption.execute(value, { key: 'tenant-a' }), RateLimitedError);
    assert.equal(await byOption.execute(value, { key: 'tenant-b' }), 42);
    const byFunction = rateLimit({ limiter, clock, key: () => 'tenant-c', cost: () => 2 });
    assert.equal(await byFunction.execute(value), 42);
    await assert.rejects(byFunction.execute(value), RateLimitedError);
    assert.equal(limiter.tryAcquire('tenant-c').remaining, 0);
    const view = rateLimit({ limiter, clock }).forKey('tenant-d');
    for (let i = 0; i < 3; i++) assert.equal(await view.execute(value), 42);
    await assert.rejects(view.execute(value), RateLimitedError);
  });

  test('honours an aborted signal before taking permits', async () => {
    const clock = new VirtualClock();
    const limiter = fixedWindow({ limit: 1, windowMs: 1000, clock });
    const policy = rateLimit({ limiter, clock });
    const controller = new AbortController();
    controller.abort('stop');
    await assert.rejects(policy.execute(value, { signal: controller.signal }), OperationCancelledError);
    assert.equal(limiter.tryAcquire('default').allowed, true);
  });

  test('emits rejected, and relays the limiter events', async () => {
    const clock = new VirtualClock();
    const policy = rateLimit({
      limiter: fixedWindow({ limit: 1, windowMs: 1000, clock }),
      clock,
      name: 'api',
    });
    const seen: string[] = [];
    policy.events.on((event) => seen.push(`${event.component}:${event.type}`));
    await policy.execute(value);
    await assert.rejects(policy.execute(value), RateLimitedError);
    assert.deepEqual(seen, ['rate-limiter:limited', 'rate-limit:rejected']);
  });

  test('validates its options', () => {
    const limiter = fixedWindow({ limit: 1, windowMs: 1000 });
    assert.throws(() => rateLimit({ limiter: {} as never }), /limiter/);
    assert.throws(() => rateLimit({ limiter, maxWaitMs: -1 }), InvalidOptionsError);
    assert.throws(() => rateLimit({ limiter, maxQueued: -1 }), /maxQueued/);
    assert.throws(() => rateLimit({ limiter, key: 5 as never }), /key/);
    assert.throws(() => rateLimit({ limiter, cost: 'x' as never }), /cost/);
  });
});

describe('rateLimit policy in queueing mode', () => {
  test('waits its turn in FIFO order and runs each call the moment its permits are due', async () => {
    const clock = new VirtualClock();
    const limiter = tokenBucket({ capacity: 1, refillRate: 1, refillIntervalMs: 100, clock });
    const policy = rateLimit({ limiter, clock, maxWaitMs: 1000 });
    const started: string[] = [];
    const call = (name: string) =>
      policy.execute(async () => {
        started.push(`${name}@${clock.monotonic()}`);
        return name;
      });
    const calls = ['a', 'b', 'c', 'd'].map(call);
    await flushMicrotasks();
    assert.deepEqual(started, ['a@0']);
    assert.equal(policy.queued, 3);
    await clock.advance(99);
    assert.deepEqual(started, ['a@0']);
    await clock.advance(1);
    assert.deepEqual(started, ['a@0', 'b@100']);
    await clock.advance(200);
    assert.deepEqual(started, ['a@0', 'b@100', 'c@200', 'd@300']);
    assert.deepEqual(await Promise.all(calls), ['a', 'b', 'c', 'd']);
    assert.equal(policy.queued, 0);
  });

  test('refuses at once when the permits are due later than it may wait', async () => {
    const clock = new VirtualClock();
    const policy = rateLimit({
      limiter: fixedWindow({ limit: 1, windowMs: 1000, clock }),
      clock,
      maxWaitMs: 150,
    });
    await policy.execute(value);
    const error = await policy.execute(value).then(
      () => assert.fail('expected a rejection'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof RateLimitedError);
    assert.equal(error.retryAfterMs, 1000);
    assert.equal(policy.queued, 0);
    assert.equal(clock.pendingTimers, 0);
  });

  test('a waiter whose turn would come too late is rejected as soon as that is known', async () => {
    const clock = new VirtualClock();
    const limiter = tokenBucket({ capacity: 1, refillRate: 1, refillIntervalMs: 100, clock });
    const policy = rateLimit({ limiter, clock, maxWaitMs: 250 });
    const reasons: string[] = [];
    policy.events.on((event) => {
      if (event.type === 'rejected') reasons.push(`${event.reason}@${clock.monotonic()}`);
    });
    const outcomes = Array.from({ length: 5 }, () =>
      policy.execute(value).then(
        () => `ok@${clock.monotonic()}`,
        (error: unknown) => (error instanceof RateLimitedError ? `limited@${clock.monotonic()}` : 'other'),
      ),
    );
    await clock.advance(1000);
    assert.deepEqual(await Promise.all(outcomes), ['ok@0', 'ok@100', 'ok@200', 'limited@200', 'limited@200']);
    assert.deepEqual(reasons, ['wait-timeout@200', 'wait-timeout@200']);
    assert.equal(clock.pendingTimers, 0);
  });

  test('an aborted waiter leaves the queue at once; those behind it keep their order', async () => {
    const clock = new VirtualClock();
    const limiter = tokenBucket({ capacity: 1, refillRate: 1, refillIntervalMs: 100, clock });
    const policy = rateLimit({ limiter, clock, maxWaitMs: 1000 });
    const started: string[] = [];
    const call = (name: string, signal?: AbortSignal) =>
      policy.execute(
        async () => {
          started.push(`${name}@${clock.monotonic()}`);
        },
        { signal },
      );
    const head = new AbortController();
    const middle = new AbortController();
    const a = call('a');
    const b = call('b', head.signal);
    const c = call('c', middle.signal);
    const d = call('d');
    await flushMicrotasks();
    middle.abort('changed my mind');
    await assert.rejects(
      c,
      (error: unknown) => error instanceof OperationCancelledError && error.reason === 'changed my mind',
    );
    assert.equal(policy.queued, 2);
    await clock.advance(50);
    head.abort();
    await assert.rejects(b, OperationCancelledError);
    await clock.advance(50);
    await Promise.all([a, d]);
    assert.deepEqual(started, ['a@0', 'd@100']);
    assert.equal(clock.pendingTimers, 0);
  });

  test('maxQueued bounds the waiters', async () => {
    const clock = new VirtualClock();
    const limiter = tokenBucket({ capacity: 1, refillRate: 1, refillIntervalMs: 100, clock });
    const policy = rateLimit({ limiter, clock, maxWaitMs: 1000, maxQueued: 1 });
    const reasons: string[] = [];
    policy.events.on((event) => {
      if (event.type === 'rejected') reasons.push(event.reason);
    });
    const first = policy.execute(value);
    const second = policy.execute(value);
    await assert.rejects(policy.execute(value), RateLimitedError);
    assert.deepEqual(reasons, ['queue-full']);
    await clock.advance(100);
    assert.deepEqual(await Promise.all([first, second]), [42, 42]);
  });

  test('with a concurrency limiter, a finished call hands its permit to the next waiter at once', async () => {
    const clock = new VirtualClock();
    const policy = rateLimit({
      limiter: concurrencyLimit({ maxInFlight: 1, clock }),
      clock,
      maxWaitMs: 1000,
    });
    const gate = deferred();
    const order: string[] = [];
    const first = policy.execute(async () => {
      order.push('first started');
      await gate.promise;
      order.push('first done');
    });
    const second = policy.execute(async () => {
      order.push('second started');
    });
    await flushMicrotasks();
    assert.deepEqual(order, ['first started']);
    gate.resolve();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['first started', 'first done', 'second started']);
    assert.equal(clock.monotonic(), 0);
  });

  test('without waiting, a concurrency limiter rejects while the permit is held and frees it after', async () => {
    const clock = new VirtualClock();
    const limiter = concurrencyLimit({ maxInFlight: 1, clock });
    const policy = rateLimit({ limiter, clock });
    const gate = deferred();
    const running = policy.execute(() => gate.promise);
    await assert.rejects(policy.execute(value), RateLimitedError);
    gate.resolve();
    await running;
    assert.equal(await policy.execute(value), 42);
    await assert.rejects(
      policy.execute(() => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(limiter.tryAcquire('default').allowed, true, 'a failed call releases its permit too');
  });

  test('refuses at once a call that asks for more than the limit, instead of blocking the queue', async () => {
    const clock = new VirtualClock();
    const limiter = concurrencyLimit({ maxInFlight: 2, clock });
    const policy = rateLimit({ limiter, clock, maxWaitMs: 5_000 });
    const gate = deferred();
    const running = policy.execute(() => gate.promise);
    await assert.rejects(policy.execute(value, { cost: 3 }), (error: unknown) => {
      return error instanceof RateLimitedError && error.retryAfterMs === Number.POSITIVE_INFINITY;
    });
    assert.equal(policy.queued, 0);
    assert.equal(await policy.execute(value), 42, 'the next call is not stuck behind it');
    gate.resolve();
    await running;
  });
});

/** A limiter of a remote store whose answers the test gives by hand, one per acquire, in order. */
function manualLimiter() {
  const asks: { resolve: (result: RateLimitResult) => void; reject: (error: unknown) => void }[] = [];
  const limiter: RateLimiter = {
    name: 'manual',
    algorithm: 'fixed-window',
    limit: 1,
    windowMs: 1000,
    store: 'remote',
    leased: false,
    events: new EventEmitter<RateLimiterEvent>(),
    acquire: () =>
      new Promise<RateLimitResult>((resolve, reject) => {
        asks.push({ resolve, reject });
      }),
    reset: async () => {},
  };
  return { limiter, asks };
}

const refusal = (retryAfterMs: number): RateLimitResult => ({
  allowed: false,
  limit: 1,
  remaining: 0,
  resetMs: retryAfterMs,
  retryAfterMs,
});
const grant: RateLimitResult = { allowed: true, limit: 1, remaining: 0, resetMs: 1000, retryAfterMs: 0 };

describe('rateLimit policy queueing on a remote store', () => {
  test('a store error for a head that already left does not drop the waiters behind it', async () => {
    const clock = new VirtualClock();
    const { limiter, asks } = manualLimiter();
    const policy = rateLimit({ limiter, clock, maxWaitMs: 1000 });
    const head = new AbortController();
    const first = policy.execute(value, { signal: head.signal });
    await waitUntil(() => asks.length === 1, 'the first call asks');
    asks[0]!.resolve(refusal(100));
    await waitUntil(() => policy.queued === 1, 'the first call queues');
    const second = policy.execute(value);
    assert.equal(policy.queued, 2);
    await clock.advance(100); // the head asks again
    assert.equal(asks.length, 2);
    head.abort();
    await assert.rejects(first, OperationCancelledError);
    asks[1]!.reject(new Error('store down'));
    await waitUntil(() => asks.length === 3, 'the second call asks in its turn');
    assert.equal(policy.queued, 1);
    asks[2]!.resolve(grant);
    assert.equal(await second, 42);
    assert.equal(policy.queued, 0);
  });

  test('a call aborted while the store answers does not wait in the queue', async () => {
    const clock = new VirtualClock();
    const { limiter, asks } = manualLimiter();
    const policy = rateLimit({ limiter, clock, maxWaitMs: 1000 });
    const controller = new AbortController();
    const call = policy.execute(value, { signal: controller.signal });
    await waitUntil(() => asks.length === 1, 'the call asks');
    controller.abort('gone');
    asks[0]!.resolve(refusal(100));
    await assert.rejects(call, (error: unknown) => error instanceof OperationCancelledError);
    assert.equal(policy.queued, 0);
    assert.equal(clock.pendingTimers, 0);
  });
});

const suites = (await storeSuites('rate-limit-policy')).filter((suite) => suite.label !== 'memory');

for (const suite of suites) {
  describe(`rateLimit policy on ${suite.label}`, { skip: suite.skip }, () => {
    after(() => suite.release());

    test('rejects past the limit and, in queueing mode, admits the waiter when its permit is due', async () => {
      const clock = new VirtualClock();
      const limiter = tokenBucket({
        capacity: 1,
        refillRate: 1,
        refillIntervalMs: 100,
        ...suite.options(clock),
      });
      const strict = rateLimit({ limiter, clock });
      assert.equal(await strict.execute(value, { key: 'k' }), 42);
      await assert.rejects(strict.execute(value, { key: 'k' }), RateLimitedError);
      const patient = rateLimit({ limiter, clock, maxWaitMs: 500 });
      let ran = false;
      const waiting = patient.execute(
        async () => {
          ran = true;
        },
        { key: 'k' },
      );
      await waitUntil(() => patient.queued === 1, 'the call is queued');
      assert.equal(ran, false);
      await clock.advance(100);
      await waiting;
      assert.equal(ran, true);
    });

    test('a waiter for a shared lease notices a release by another process within 100 ms', async () => {
      const clock = new VirtualClock();
      const options = { maxInFlight: 1, leaseMs: 60_000, ...suite.options(clock) };
      const elsewhere = concurrencyLimit(options); // same store and name: another process's view
      const held = await elsewhere.acquire('k');
      const policy = rateLimit({ limiter: concurrencyLimit(options), clock, maxWaitMs: 5000 });
      let startedAt: number | undefined;
      const waiting = policy.execute(
        async () => {
          startedAt = clock.monotonic();
        },
        { key: 'k' },
      );
      await waitUntil(() => policy.queued === 1, 'the call is queued');
      await held.lease?.release();
      await clock.advance(99);
      assert.equal(startedAt, undefined);
      await clock.advance(1);
      await waiting;
      assert.equal(startedAt, 100);
    });

    test('holds a concurrency lease in the store while the call runs', async () => {
      const clock = new VirtualClock();
      const limiter = concurrencyLimit({ maxInFlight: 1, leaseMs: 10_000, ...suite.options(clock) });
      const policy = rateLimit({ limiter, clock });
      const gate = deferred();
      const running = policy.execute(() => gate.promise, { key: 'k' });
      await waitUntil(async () => (await limiter.acquire('k', 0)).remaining === 0, 'the lease is held');
      await assert.rejects(policy.execute(value, { key: 'k' }), RateLimitedError);
      gate.resolve();
      await running;
      await waitUntil(async () => (await limiter.acquire('k', 0)).remaining === 1, 'the lease is released');
    });
  });
}
