/**
 * The contract every CircuitStateStore passes (memory, Redis, PostgreSQL): versioned compare-and-set, quorum
 * reports and change notifications. The memory store is the reference. Each adapter's test file calls
 * `circuitStateStoreContract` with a pair of stores on separate connections, as two processes would have them.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { randomId } from '@stratus/core';
import type { CircuitStateStore, SharedCircuitRecord, SharedCircuitState } from './state-store.js';

export interface StorePair {
  readonly a: CircuitStateStore;
  readonly b: CircuitStateStore;
}

export const T0 = Date.UTC(2026, 0, 1);

/** A shared state at T0, open after a trip, with `overrides` over it. */
export function state(overrides: Partial<SharedCircuitState> = {}): SharedCircuitState {
  return {
    state: 'open',
    openUntil: T0 + 5000,
    openCount: 1,
    lastOpenMs: 5000,
    trials: {},
    successes: 0,
    reason: 'trip-rule',
    lastFailure: 'Error: boom',
    updatedAt: T0,
    updatedBy: 'instance-a',
    ...overrides,
  };
}

/** Resolves with the first value `register` delivers, or rejects after `ms` (a bounded wait, not a sleep). */
function nextDelivery<T>(register: (deliver: (value: T) => void) => Promise<unknown>, ms = 5000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nothing delivered within ${ms} ms`)), ms);
    register((value) => {
      clearTimeout(timer);
      resolve(value);
    }).catch(reject);
  });
}

/** The store, with every subscription it hands out recorded so the suite can end them before closing clients. */
export function tracked(subscriptions: (() => Promise<void>)[], store: CircuitStateStore): CircuitStateStore {
  const subscribe = store.subscribe?.bind(store);
  return {
    kind: store.kind,
    read: (k) => store.read(k),
    compareAndSet: (k, v, s) => store.compareAndSet(k, v, s),
    report: (k, r, n) => store.report(k, r, n),
    subscribe: subscribe
      ? async (k, listener) => {
          const off = await subscribe(k, listener);
          subscriptions.push(off);
          return off;
        }
      : undefined,
  };
}

export function circuitStateStoreContract(pairOf: () => StorePair): void {
  const key = () => `circuit-${randomId()}`;

  it('reads nothing for a circuit never written', async () => {
    assert.equal(await pairOf().a.read(key()), undefined);
  });

  it('creates version 1 from version 0 and reads it back everywhere', async () => {
    const { a, b } = pairOf();
    const k = key();
    const result = await a.compareAndSet(k, 0, state({ trials: { t1: T0 + 100 } }));
    assert.equal(result.written, true);
    assert.deepEqual(result.record, { ...state({ trials: { t1: T0 + 100 } }), version: 1 });
    assert.deepEqual(await b.read(k), result.record);
  });

  it('refuses a write based on a stale version and returns the current record', async () => {
    const { a, b } = pairOf();
    const k = key();
    await a.compareAndSet(k, 0, state());
    const second = await b.compareAndSet(k, 1, state({ state: 'half-open', reason: 'open-elapsed' }));
    assert.equal(second.written, true);
    assert.equal(second.record?.version, 2);
    const stale = await a.compareAndSet(k, 1, state({ state: 'closed' }));
    assert.equal(stale.written, false);
    assert.equal(stale.record?.version, 2);
    assert.equal(stale.record?.state, 'half-open');
    const create = await a.compareAndSet(k, 0, state());
    assert.equal(create.written, false);
    assert.equal(create.record?.version, 2);
  });

  it('lets exactly one of many concurrent writers from the same version win', async () => {
    const { a, b } = pairOf();
    const k = key();
    await a.compareAndSet(k, 0, state());
    const writes = Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? a : b).compareAndSet(k, 1, state({ updatedBy: `writer-${i}` })),
    );
    const results = await Promise.all(writes);
    const winners = results.filter((r) => r.written);
    assert.equal(winners.length, 1);
    const stored = await a.read(k);
    assert.equal(stored?.version, 2);
    assert.equal(stored?.updatedBy, winners[0]?.record?.updatedBy);
  });

  it('keeps circuits apart', async () => {
    const { a } = pairOf();
    const [k1, k2] = [key(), key()];
    await a.compareAndSet(k1, 0, state());
    assert.equal(await a.read(k2), undefined);
    assert.equal((await a.compareAndSet(k2, 0, state({ state: 'isolated' }))).record?.version, 1);
    assert.equal((await a.read(k1))?.state, 'open');
  });

  it('keeps a circuit apart from one whose name ends like its quorum or change keys', async () => {
    const { a } = pairOf();
    const k = key();
    const report = { instanceId: 'i1', failing: true, since: T0, expiresAt: T0 + 3000 };
    assert.equal((await a.report(k, report, T0)).length, 1);
    for (const suffix of [':quorum', ':changes']) {
      const created = await a.compareAndSet(`${k}${suffix}`, 0, state());
      assert.equal(created.written, true, `circuit "${k}${suffix}" could be created`);
    }
    assert.equal((await a.compareAndSet(k, 0, state())).written, true);
    assert.equal((await a.report(k, { ...report, instanceId: 'i2' }, T0)).length, 2);
  });

  it('returns live quorum reports, drops expired ones, and lets an instance withdraw', async () => {
    const { a, b } = pairOf();
    const k = key();
    const report = (instanceId: string, failing: boolean, expiresAt: number) => ({
      instanceId,
      failing,
      since: T0,
      expiresAt,
    });
    assert.deepEqual(await a.report(k, report('i1', true, T0 + 3000), T0), [report('i1', true, T0 + 3000)]);
    const both = await b.report(k, report('i2', false, T0 + 1000), T0 + 10);
    assert.deepEqual(
      [...both].sort((x, y) => x.instanceId.localeCompare(y.instanceId)),
      [report('i1', true, T0 + 3000), report('i2', false, T0 + 1000)],
    );
    // i2 stopped heartbeating: at T0 + 1000 its report is gone.
    assert.deepEqual(await a.report(k, report('i1', true, T0 + 4000), T0 + 1000), [
      report('i1', true, T0 + 4000),
    ]);
    // i1 withdraws (expiresAt <= now).
    assert.deepEqual(await b.report(k, report('i1', false, T0 + 1500), T0 + 1500), []);
    assert.deepEqual(await a.report(k, report('i3', false, T0 + 9000), T0 + 1600), [
      report('i3', false, T0 + 9000),
    ]);
  });

  it('tells subscribers about writes made by other clients, until they unsubscribe', async () => {
    const { a, b } = pairOf();
    const k = key();
    let unsubscribe: (() => Promise<void>) | undefined;
    const seen: SharedCircuitRecord[] = [];
    const first = nextDelivery<SharedCircuitRecord>(async (deliver) => {
      unsubscribe = await a.subscribe?.(k, (record) => {
        seen.push(record);
        deliver(record);
      });
      await b.compareAndSet(key(), 0, state()); // another circuit: not delivered
      await b.compareAndSet(k, 0, state({ reason: 'retry-after' }));
    });
    assert.deepEqual(await first, { ...state({ reason: 'retry-after' }), version: 1 });
    await unsubscribe?.();
    // After unsubscribing, a later write is not delivered; a subscriber that is still on sees it (ordering).
    const later = nextDelivery<SharedCircuitRecord>(async (deliver) => {
      const off = await a.subscribe?.(k, deliver);
      await b.compareAndSet(k, 1, state({ state: 'closed' }));
      return off;
    });
    assert.equal((await later).version, 2);
    assert.deepEqual(
      seen.map((r) => r.version),
      [1],
    );
  });
}
