import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { exponentialBackoff, InvalidOptionsError, OperationCancelledError } from '@stratus/core';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { BrokenCircuitError, IsolatedCircuitError, TimeoutError } from '../errors.js';
import {
  type CircuitBreakerEvent,
  type CircuitBreakerOptions,
  type CircuitBreakerPolicy,
  circuitBreaker,
} from './circuit-breaker.js';
import { SharedCircuitFailure, type SharedCircuitOptions } from './circuit-sync.js';
import { FaultyStore } from './fixtures/faulty-store.js';
import { MemoryCircuitStateStore } from './memory-state-store.js';

const boom = new Error('boom');
const fail = () => Promise.reject(boom);
const ok = async () => 'ok';

/** Breakers of several "instances" sharing one circuit through one store, on one virtual clock. */
function cluster(shared: Partial<SharedCircuitOptions> = {}, options: CircuitBreakerOptions = {}) {
  const clock = new VirtualClock();
  const memory = new MemoryCircuitStateStore();
  const breakers: CircuitBreakerPolicy[] = [];
  const instance = (instanceId: string, store = new FaultyStore(memory)) => {
    const events: CircuitBreakerEvent[] = [];
    const breaker = circuitBreaker({
      clock,
      name: 'payments',
      openMs: 1000,
      trip: { kind: 'consecutive-failures', failures: 1 },
      shared: { store, instanceId, syncIntervalMs: 1000, subscribe: false, ...shared },
      ...options,
    });
    breaker.events.on((e) => events.push(e));
    breakers.push(breaker);
    disposers.push(() => breaker.dispose());
    return { breaker, store, events };
  };
  return { clock, memory, instance, breakers };
}

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose();
});

async function trip(breaker: CircuitBreakerPolicy): Promise<void> {
  await assert.rejects(breaker.execute(fail), boom);
  assert.equal(breaker.state, 'open');
}

function rejection(breaker: CircuitBreakerPolicy): Promise<BrokenCircuitError> {
  return breaker.execute(ok).then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => {
      assert.ok(e instanceof BrokenCircuitError, String(e));
      return e;
    },
  );
}

function deferred<T = string>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

describe('shared circuit (mode "shared")', () => {
  it('opens on every instance within one sync interval when one instance trips', async () => {
    const { clock, instance } = cluster({}, { openMs: 10_000 });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(999);
    assert.equal(b.breaker.state, 'closed');
    await clock.advance(1);
    assert.equal(b.breaker.state, 'open');
    const error = await rejection(b.breaker);
    assert.equal(error.retryAt, (await rejection(a.breaker)).retryAt);
    assert.ok(error.lastFailure instanceof SharedCircuitFailure);
    assert.equal(error.lastFailure.instanceId, 'a');
    assert.match(error.lastFailure.message, /Error: boom/);
    assert.ok(b.events.some((e) => e.type === 'state-change' && e.to === 'open' && e.reason === 'shared'));
  });

  it('propagates at once through a subscription', async () => {
    const { instance } = cluster({ subscribe: true, syncIntervalMs: 60_000 });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker);
    await flushMicrotasks();
    assert.equal(b.breaker.state, 'open');
  });

  it('never calls the store on the path of a closed call', async () => {
    const { instance } = cluster();
    const a = instance('a');
    await flushMicrotasks();
    const before = a.store.calls;
    for (let i = 0; i < 1000; i++) await a.breaker.execute(ok);
    assert.equal(a.store.calls, before);
  });

  it('shows the open period to an instance that starts later', async () => {
    const { clock, instance } = cluster();
    const a = instance('a');
    await flushMicrotasks();
    await trip(a.breaker);
    await flushMicrotasks();
    await clock.advance(400);
    const c = instance('c');
    await flushMicrotasks();
    assert.equal(c.breaker.state, 'open');
    assert.equal((await rejection(c.breaker)).retryAt, clock.now() + 600);
  });

  it('admits exactly the configured number of trials across all instances', async () => {
    for (const maxConcurrent of [1, 2]) {
      const { clock, instance } = cluster({}, { halfOpen: { maxConcurrent, successesToClose: 10 } });
      const a = instance('a');
      const b = instance('b');
      await flushMicrotasks();
      await trip(a.breaker);
      await clock.advance(1000); // b syncs the opening; the open period runs out everywhere
      assert.equal(b.breaker.state, 'half-open');
      const gate = deferred();
      let started = 0;
      const calls = [a.breaker, b.breaker].flatMap((breaker) =>
        Array.from({ length: 500 }, () =>
          breaker.execute(() => {
            started++;
            return gate.promise;
          }),
        ),
      );
      const settled = Promise.allSettled(calls);
      await flushMicrotasks();
      assert.equal(started, maxConcurrent);
      gate.resolve('ok');
      const outcomes = await settled;
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, maxConcurrent);
      assert.ok(outcomes.every((o) => o.status === 'fulfilled' || o.reason instanceof BrokenCircuitError));
    }
  });

  it('closes everywhere when a trial succeeds on any instance', async () => {
    const { clock, instance } = cluster({ subscribe: true });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    assert.equal(await b.breaker.execute(ok), 'ok');
    assert.equal(b.breaker.state, 'closed');
    await flushMicrotasks();
    assert.equal(a.breaker.state, 'closed');
    assert.ok(
      b.events.some((e) => e.type === 'state-change' && e.to === 'closed' && e.reason === 'trials-succeeded'),
    );
  });

  it('counts trial successes cluster-wide towards closing', async () => {
    const { clock, instance } = cluster({ subscribe: true }, { halfOpen: { successesToClose: 2 } });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    await a.breaker.execute(ok);
    assert.equal(a.breaker.state, 'half-open');
    await b.breaker.execute(ok);
    assert.equal(b.breaker.state, 'closed');
    await flushMicrotasks();
    assert.equal(a.breaker.state, 'closed');
  });

  it('reopens everywhere when a trial fails, continuing the shared backoff', async () => {
    const { clock, instance } = cluster(
      { subscribe: true },
      { openMs: exponentialBackoff({ initialMs: 1000, maxMs: 60_000 }) },
    );
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker); // first opening: 1000 ms
    await clock.advance(1000);
    await assert.rejects(b.breaker.execute(fail), boom); // b's trial fails: second opening, 2000 ms
    await flushMicrotasks();
    for (const breaker of [a.breaker, b.breaker]) {
      assert.equal(breaker.state, 'open');
      assert.equal((await rejection(breaker)).retryAt, clock.now() + 2000);
    }
    await clock.advance(2000);
    await assert.rejects(a.breaker.execute(fail), boom); // third: 4000 ms
    await flushMicrotasks();
    assert.equal((await rejection(b.breaker)).retryAt, clock.now() + 4000);
  });

  it('frees the trial slot of an instance that never reports back once its lease expires', async () => {
    const { clock, instance } = cluster({ trialLeaseMs: 5000 });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    const hung = a.breaker.execute(() => new Promise(() => {})); // a's trial never ends (as if a died)
    await flushMicrotasks();
    await rejection(b.breaker);
    await clock.advance(5000);
    assert.equal(await b.breaker.execute(ok), 'ok');
    assert.equal(b.breaker.state, 'closed');
    void hung;
  });

  it('isolates and resets the circuit for every instance', async () => {
    const { instance } = cluster({ subscribe: true });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    const release = a.breaker.isolate();
    await flushMicrotasks();
    assert.equal(b.breaker.state, 'isolated');
    await assert.rejects(b.breaker.execute(ok), IsolatedCircuitError);
    b.breaker.reset();
    await flushMicrotasks();
    assert.equal(a.breaker.state, 'closed');
    release(); // ended by the reset already: inert
    await flushMicrotasks();
    assert.equal(b.breaker.state, 'closed');
  });

  it('settles simultaneous trips on one open period', async () => {
    const { instance } = cluster({ subscribe: true });
    const a = instance('a');
    const b = instance('b');
    await flushMicrotasks();
    await Promise.all([trip(a.breaker), trip(b.breaker)]);
    await flushMicrotasks();
    const [ra, rb] = [await rejection(a.breaker), await rejection(b.breaker)];
    assert.equal(ra.retryAt, rb.retryAt);
  });

  describe('when the store is unreachable', () => {
    it('keeps working on local state, says so, and shares its state once the store is back', async () => {
      const { clock, instance } = cluster({ storeTimeoutMs: 200 }, { openMs: 10_000 });
      const a = instance('a');
      const b = instance('b');
      await flushMicrotasks();
      a.store.condition = 'down';
      await clock.advance(1000);
      assert.equal(a.breaker.sharedStateAvailable, false);
      const unavailable = a.events.find((e) => e.type === 'shared-state-unavailable');
      assert.ok(unavailable?.type === 'shared-state-unavailable' && unavailable.store === 'memory');
      assert.equal(await a.breaker.execute(ok), 'ok');
      await trip(a.breaker); // locally
      await clock.advance(500);
      assert.equal(b.breaker.state, 'closed'); // b cannot know yet
      a.store.condition = 'up';
      await clock.advance(1000); // a's next round writes the pending opening, b's next read sees it
      assert.equal(a.breaker.sharedStateAvailable, true);
      assert.ok(a.events.some((e) => e.type === 'shared-state-restored'));
      assert.equal(b.breaker.state, 'open');
    });

    it('bounds every store call by the timeout and never blocks closed calls on it', async () => {
      const { clock, instance } = cluster({ storeTimeoutMs: 300 });
      const a = instance('a');
      await flushMicrotasks();
      a.store.condition = 'hang';
      await clock.advance(1000); // a read starts and hangs
      assert.equal(await a.breaker.execute(ok), 'ok'); // not waiting for the store
      await clock.advance(300);
      const unavailable = a.events.find((e) => e.type === 'shared-state-unavailable');
      assert.ok(
        unavailable?.type === 'shared-state-unavailable' && unavailable.error instanceof TimeoutError,
      );
    });

    it('runs half-open trials locally while the store is unreachable', async () => {
      const { clock, instance } = cluster({ storeTimeoutMs: 200 });
      const a = instance('a');
      await flushMicrotasks();
      a.store.condition = 'down';
      await trip(a.breaker);
      await clock.advance(1000);
      assert.equal(a.breaker.sharedStateAvailable, false);
      assert.equal(await a.breaker.execute(ok), 'ok');
      assert.equal(a.breaker.state, 'closed');
    });
  });

  it('frees the trial slot of a caller who gave up while the store was asked for a trial lease', async () => {
    const { clock, instance } = cluster({ storeTimeoutMs: 200 });
    const a = instance('a');
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    assert.equal(a.breaker.state, 'half-open');
    a.store.condition = 'hang';
    const controller = new AbortController();
    const trial = assert.rejects(
      a.breaker.execute(ok, { signal: controller.signal }),
      OperationCancelledError,
    );
    controller.abort();
    await clock.advance(200); // the lease request times out: the store is unavailable
    await trial;
    assert.equal(a.breaker.sharedStateAvailable, false);
    assert.equal(await a.breaker.execute(ok), 'ok'); // a local trial: the slot is free again
    assert.equal(a.breaker.state, 'closed');
  });

  it('stops its background work on dispose', async () => {
    const { clock, instance } = cluster();
    const a = instance('a');
    await flushMicrotasks();
    assert.ok(clock.pendingTimers > 0);
    await a.breaker.dispose();
    assert.equal(clock.pendingTimers, 0);
    const calls = a.store.calls;
    await clock.advance(10_000);
    assert.equal(a.store.calls, calls);
  });

  it('validates the shared options', () => {
    const store = new MemoryCircuitStateStore();
    const cases: [CircuitBreakerOptions, string][] = [
      [{ shared: { store } }, 'shared.key'],
      [{ name: 'x', shared: { store, key: '' } }, 'shared.key'],
      [{ name: 'x', shared: { store: {} as never } }, 'shared.store.read'],
      [{ name: 'x', shared: { store, mode: 'gossip' as never } }, 'shared.mode'],
      [{ name: 'x', shared: { store, syncIntervalMs: 0 } }, 'shared.syncIntervalMs'],
      [{ name: 'x', shared: { store, storeTimeoutMs: -1 } }, 'shared.storeTimeoutMs'],
      [{ name: 'x', shared: { store, trialLeaseMs: 0 } }, 'shared.trialLeaseMs'],
      [
        { name: 'x', shared: { store, mode: 'quorum', quorum: { minInstances: 0 } } },
        'shared.quorum.minInstances',
      ],
      [{ name: 'x', shared: { store, mode: 'quorum', quorum: { ratio: 0 } } }, 'shared.quorum.ratio'],
      [{ name: 'x', shared: { store, mode: 'quorum', quorum: { ttlMs: 0 } } }, 'shared.quorum.ttlMs'],
    ];
    for (const [options, option] of cases) {
      assert.throws(
        () => circuitBreaker({ clock: new VirtualClock(), ...options }),
        (e: unknown) => e instanceof InvalidOptionsError && e.option === option,
        option,
      );
    }
  });
});
