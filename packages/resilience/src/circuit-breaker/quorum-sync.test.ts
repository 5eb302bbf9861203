import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { flushMicrotasks, VirtualClock } from '@stratus/testkit';
import { type CircuitBreakerEvent, type CircuitBreakerPolicy, circuitBreaker } from './circuit-breaker.js';
import type { QuorumOptions } from './circuit-sync.js';
import { FaultyStore } from './fixtures/faulty-store.js';
import { MemoryCircuitStateStore } from './memory-state-store.js';

const boom = new Error('boom');

const disposers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose();
});

/** Instances voting on one circuit through one memory store, on one virtual clock (heartbeat 1 s, TTL 3 s). */
function cluster(quorum: QuorumOptions = {}) {
  const clock = new VirtualClock();
  const memory = new MemoryCircuitStateStore();
  const instance = (instanceId: string) => {
    const store = new FaultyStore(memory);
    const events: CircuitBreakerEvent[] = [];
    const breaker = circuitBreaker({
      clock,
      name: 'payments',
      openMs: 10_000,
      trip: { kind: 'consecutive-failures', failures: 1 },
      shared: { store, instanceId, mode: 'quorum', syncIntervalMs: 1000, storeTimeoutMs: 200, quorum },
    });
    breaker.events.on((e) => events.push(e));
    disposers.push(() => breaker.dispose());
    return { breaker, store, events };
  };
  /** The live reports as the store holds them now (a read-only probe: it reports as expired at once). */
  const reports = async () =>
    (
      await memory.report(
        'payments',
        { instanceId: 'probe', failing: false, since: 0, expiresAt: 0 },
        clock.now(),
      )
    )
      .map((r) => `${r.instanceId}:${r.failing ? 'failing' : 'ok'}`)
      .sort();
  return { clock, instance, reports };
}

async function trip(breaker: CircuitBreakerPolicy): Promise<void> {
  await assert.rejects(
    breaker.execute(() => Promise.reject(boom)),
    boom,
  );
  assert.equal(breaker.state, 'open');
}

const openedByQuorum = (events: readonly CircuitBreakerEvent[]) =>
  events.some((e) => e.type === 'state-change' && e.to === 'open' && e.reason === 'quorum');

describe('shared circuit (mode "quorum")', () => {
  it('opens every instance once the minimum number of instances report failing', async () => {
    const { clock, instance, reports } = cluster({ minInstances: 2 });
    const [a, b, c] = [instance('a'), instance('b'), instance('c')];
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    assert.equal(c.breaker.state, 'closed'); // one failing instance is not a quorum
    await trip(b.breaker);
    await clock.advance(1000);
    assert.equal(c.breaker.state, 'open');
    assert.ok(openedByQuorum(c.events));
    // Being opened by the quorum is not evidence: c still votes ok.
    assert.deepEqual(await reports(), ['a:failing', 'b:failing', 'c:ok']);
  });

  it('honours a failing ratio of the live instances', async () => {
    const { clock, instance } = cluster({ minInstances: 1, ratio: 0.5 });
    const [a, b, c, d] = [instance('a'), instance('b'), instance('c'), instance('d')];
    await flushMicrotasks();
    await trip(a.breaker);
    await clock.advance(1000);
    assert.equal(c.breaker.state, 'closed'); // 1 of 4
    await trip(b.breaker);
    await clock.advance(1000);
    assert.deepEqual([c.breaker.state, d.breaker.state], ['open', 'open']); // 2 of 4
  });

  it('does not reopen an instance that recovered on reports older than its recovery', async () => {
    const { clock, instance } = cluster({ minInstances: 2 });
    const [a, b, c] = [instance('a'), instance('b'), instance('c')];
    await flushMicrotasks();
    await trip(a.breaker);
    await trip(b.breaker);
    await clock.advance(1000);
    assert.equal(c.breaker.state, 'open');
    await clock.advance(10_000);
    assert.equal(await c.breaker.execute(async () => 'ok'), 'ok'); // c's trial succeeds
    assert.equal(c.breaker.state, 'closed');
    await clock.advance(5000); // a and b still vote failing, from before c recovered
    assert.equal(c.breaker.state, 'closed');
  });

  it('drops instances that stop heartbeating once their reports expire', async () => {
    const { clock, instance, reports } = cluster({ minInstances: 2 });
    const [a, b] = [instance('a'), instance('b')];
    await flushMicrotasks();
    await trip(a.breaker);
    await trip(b.breaker);
    await flushMicrotasks();
    a.store.condition = 'down'; // a is cut off (as if it died): its report is no longer renewed
    await clock.advance(3000);
    assert.deepEqual(await reports(), ['b:failing']);
    const late = instance('late');
    await clock.advance(2000);
    assert.equal(late.breaker.state, 'closed'); // one live failing instance left: no quorum
  });

  it('withdraws its vote when disposed', async () => {
    const { clock, instance, reports } = cluster({ minInstances: 2 });
    const [a, b] = [instance('a'), instance('b')];
    await flushMicrotasks();
    await trip(a.breaker);
    await trip(b.breaker);
    await flushMicrotasks();
    await a.breaker.dispose();
    assert.deepEqual(await reports(), ['b:failing']);
    const late = instance('late');
    await clock.advance(1000);
    assert.equal(late.breaker.state, 'closed');
  });

  it('keeps deciding locally when the store is unreachable, and says so', async () => {
    const { clock, instance } = cluster({ minInstances: 2 });
    const a = instance('a');
    await flushMicrotasks();
    a.store.condition = 'down';
    await clock.advance(1000);
    assert.equal(a.breaker.sharedStateAvailable, false);
    assert.ok(a.events.some((e) => e.type === 'shared-state-unavailable'));
    await trip(a.breaker); // its own rule still works
    a.store.condition = 'up';
    await clock.advance(1000);
    assert.equal(a.breaker.sharedStateAvailable, true);
    assert.ok(a.events.some((e) => e.type === 'shared-state-restored'));
  });
});
