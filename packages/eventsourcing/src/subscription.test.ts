import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantBackoff } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { EventStore } from './event-store.js';
import { withOutage } from './fixtures/outage.js';
import { MemoryEventStoreBackend } from './memory/memory-event-store.js';
import type { SubscriptionEvent } from './subscription.js';

function openStore(clock = new VirtualClock({ now: 1_750_000_000_000 })) {
  return { store: new EventStore({ backend: new MemoryEventStoreBackend(), clock }), clock };
}

const append = (store: EventStore, stream: string, ...values: number[]) =>
  store.appendToStream(
    stream,
    values.map((n) => ({ type: 'N', data: n })),
  );

describe('Subscription', () => {
  it('catches up, then follows new appends live, in order', async () => {
    const { store } = openStore();
    await append(store, 'a-1', 1, 2);
    await append(store, 'b-1', 3);
    const seen: unknown[] = [];
    const subscription = store.subscribe({ handler: (event) => void seen.push(event.data), batchSize: 2 });
    await subscription.caughtUp;
    assert.deepEqual(seen, [1, 2, 3]);
    await append(store, 'a-1', 4);
    await append(store, 'c-1', 5, 6);
    await waitUntil(() => seen.length === 6, 'the live events arrive');
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
    await subscription.stop();
  });

  it('hands whole batches to handleBatch', async () => {
    const { store } = openStore();
    await append(store, 'a-1', 1, 2, 3, 4, 5);
    const batches: unknown[][] = [];
    const subscription = store.subscribe({
      batchSize: 2,
      handleBatch: (events) => void batches.push(events.map((e) => e.data)),
    });
    await subscription.caughtUp;
    assert.deepEqual(batches, [[1, 2], [3, 4], [5]]);
    await subscription.stop();
  });

  it('resumes after its checkpoint, and starts at the end when asked', async () => {
    const { store } = openStore();
    await append(store, 'a-1', 1, 2, 3);
    const first: unknown[] = [];
    const one = store.subscribe({ name: 'projector', handler: (e) => void first.push(e.data) });
    await one.caughtUp;
    await one.stop();
    assert.equal(await store.backend.loadCheckpoint('projector'), 3);
    await append(store, 'a-1', 4);
    const second: unknown[] = [];
    const two = store.subscribe({ name: 'projector', handler: (e) => void second.push(e.data) });
    await two.caughtUp;
    assert.deepEqual(second, [4]);
    await two.stop();
    const fresh: unknown[] = [];
    const latest = store.subscribe({ from: 'end', handler: (e) => void fresh.push(e.data) });
    await latest.caughtUp;
    await append(store, 'a-1', 5);
    await waitUntil(() => fresh.length === 1, 'the new event arrives');
    assert.deepEqual(fresh, [5]);
    await latest.stop();
  });

  it('with checkpointEveryMs, stores the checkpoint once per interval, busy or caught up', async () => {
    const { store, clock } = openStore();
    await append(store, 'a-1', 1, 2, 3, 4, 5, 6);
    const saved: number[] = [];
    const handled: unknown[] = [];
    const subscription = store.subscribe({
      name: 'throttled',
      batchSize: 1,
      checkpointEveryMs: 1000,
      handler: async (event) => {
        handled.push(event.data);
        if (event.data === 3) await clock.advance(1000);
      },
    });
    subscription.events.on((event) => {
      if (event.type === 'checkpointed') saved.push(event.position);
    });
    await subscription.caughtUp;
    // The first batch and the first after the interval passed; caught up, the rest waits for the interval's end.
    assert.deepEqual(saved, [1, 3]);
    assert.deepEqual(handled, [1, 2, 3, 4, 5, 6]);
    await clock.advance(999);
    assert.deepEqual(saved, [1, 3]);
    await clock.advance(1);
    await waitUntil(() => saved.length === 3, 'the position caught up at is stored when the interval ends');
    assert.deepEqual(saved, [1, 3, 6]);
    assert.equal(await store.backend.loadCheckpoint('throttled'), 6);
    await subscription.stop();
  });

  it('with appendDelayMs, reads a burst of appends after the delay as one batch', async () => {
    const { store, clock } = openStore();
    const batches: unknown[][] = [];
    const subscription = store.subscribe({
      appendDelayMs: 50,
      handleBatch: (events) => void batches.push(events.map((event) => event.data)),
    });
    await subscription.caughtUp;
    await append(store, 'a-1', 1);
    await append(store, 'b-1', 2);
    await append(store, 'a-1', 3);
    // Woken by the first append, it waits out the delay (virtual time stands still) before reading.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(batches, []);
    await clock.advance(50);
    await waitUntil(() => batches.length === 1, 'the burst is read');
    assert.deepEqual(batches, [[1, 2, 3]]);
    assert.throws(() => store.subscribe({ appendDelayMs: -1, handler: () => {} }), /appendDelayMs/);
    await subscription.stop();
  });

  it('goes on through a store outage, from its start and between reads, with a store-error each time', async () => {
    const clock = new VirtualClock({ now: 1_750_000_000_000 });
    const outage = withOutage(new MemoryEventStoreBackend(), [
      'readAll',
      'loadCheckpoint',
      'storeCheckpoint',
    ]);
    const store = new EventStore({ backend: outage.part, clock });
    await append(store, 'a-1', 1, 2);
    outage.down = true;
    const seen: unknown[] = [];
    const errors: Extract<SubscriptionEvent, { type: 'store-error' }>[] = [];
    const subscription = store.subscribe({ name: 'through', handler: (event) => void seen.push(event.data) });
    subscription.events.on((event) => {
      if (event.type === 'store-error') errors.push(event);
    });
    let settled = false;
    void subscription.done.finally(() => {
      settled = true;
    });
    // Down from the start: its checkpoint cannot even be read; the backoff (100 ms, doubling, up to 5 s) paces it.
    await waitUntil(() => errors.length === 1, 'the first failure');
    // How long until the last failure's retry is due.
    const untilRetry = () => {
      const last = errors.at(-1) as { at: number; retryInMs: number };
      return last.at + last.retryInMs - clock.now();
    };
    for (let attempt = 2; attempt <= 8; attempt++) {
      await clock.advance(untilRetry() - 1);
      assert.equal(errors.length, attempt - 1, 'not before its backoff');
      await clock.advance(2);
      await waitUntil(() => errors.length === attempt, `failure ${attempt}`);
    }
    assert.deepEqual(
      errors.map((e) => e.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert.ok(errors.every((e) => e.retryInMs > 0 && e.retryInMs <= 5_000));
    assert.ok(errors.every((e) => (e.error as { code?: string }).code === 'ECONNREFUSED'));
    assert.equal(subscription.storeFailures, 8);
    assert.deepEqual(seen, []);
    outage.down = false;
    await clock.advance(untilRetry() + 1);
    await subscription.caughtUp;
    assert.deepEqual(seen, [1, 2]);
    assert.equal(subscription.storeFailures, 0, 'healthy again');

    // Down again while it follows: appends made meanwhile are handled once it is back, none twice.
    outage.down = true;
    await append(store, 'a-1', 3);
    await waitUntil(() => errors.length === 9, 'the read fails');
    await append(store, 'b-1', 4);
    outage.down = false;
    await clock.advance(untilRetry() + 1);
    await waitUntil(() => seen.length === 4, 'the events appended during the outage');
    assert.deepEqual(seen, [1, 2, 3, 4]);
    await waitUntil(async () => (await store.backend.loadCheckpoint('through')) === 4, 'the checkpoint');
    assert.equal(settled, false, 'it never stopped');
    await subscription.stop();
    assert.equal(settled, true);
  });

  it('retries a failing event after the backoff, without skipping it or going past it', async () => {
    const { store, clock } = openStore();
    await append(store, 'a-1', 1, 2, 3);
    const seen: unknown[] = [];
    let failures = 2;
    const events: SubscriptionEvent[] = [];
    const subscription = store.subscribe({
      name: 'flaky',
      retryBackoff: constantBackoff(1000),
      handler: (event) => {
        if (event.data === 2 && failures-- > 0) throw new Error('not yet');
        seen.push(event.data);
      },
    });
    subscription.events.on((event) => events.push(event));
    await waitUntil(() => events.some((e) => e.type === 'handler-failed'), 'the first failure');
    assert.deepEqual(seen, [1]);
    await clock.advance(1000);
    await waitUntil(
      () => events.filter((e) => e.type === 'handler-failed').length === 2,
      'the second failure',
    );
    assert.deepEqual(seen, [1], 'nothing after the failing event runs meanwhile');
    await clock.advance(1000);
    await subscription.caughtUp;
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(await store.backend.loadCheckpoint('flaky'), 3);
    await subscription.stop();
  });

  it('parks an event after maxAttempts tries spaced by the backoff, and goes on', async () => {
    const { store, clock } = openStore();
    await append(store, 'a-1', 1, 2);
    await append(store, 'b-1', 3);
    const seen: unknown[] = [];
    const events: SubscriptionEvent[] = [];
    // No name: the parked event is kept in memory, for as long as the subscription runs.
    const subscription = store.subscribe({
      retryBackoff: constantBackoff(1000),
      maxAttempts: 3,
      handler: (event) => {
        if (event.data === 1) throw new Error('bad');
        seen.push(event.data);
      },
    });
    subscription.events.on((event) => events.push(event));
    const failures = () => events.filter((e) => e.type === 'handler-failed').length;
    await waitUntil(() => failures() === 1, 'the first attempt fails');
    await clock.advance(999);
    assert.equal(failures(), 1, 'the next attempt waits for the backoff');
    await clock.advance(1);
    await waitUntil(() => failures() === 2, 'the second attempt fails');
    assert.equal(subscription.failingAttempts, 2);
    await clock.advance(1000);
    await subscription.caughtUp;
    assert.deepEqual(seen, [3], "a-1's second event waits behind the parked one; b-1 goes on");
    assert.equal(subscription.parkedCount, 2);
    assert.equal(subscription.failingAttempts, 0);
    assert.deepEqual(
      events
        .filter((e) => e.type === 'event-parked')
        .map((e) => e.type === 'event-parked' && [e.position, e.reason]),
      [
        [1, 'failed'],
        [2, 'blocked'],
      ],
    );
    assert.deepEqual(await store.parkedCounts(), {}, 'nothing is stored for an unnamed subscription');
    await subscription.stop();
  });

  it('reads its parked events again only once a retry or a skip was asked for', async () => {
    let listings = 0;
    class CountingBackend extends MemoryEventStoreBackend {
      override listParked(...args: Parameters<MemoryEventStoreBackend['listParked']>) {
        listings++;
        return super.listParked(...args);
      }
    }
    const clock = new VirtualClock({ now: 1_750_000_000_000 });
    const store = new EventStore({ backend: new CountingBackend(), clock });
    await append(store, 'a-1', 1, 2);
    let failing = true;
    const seen: unknown[] = [];
    const subscription = store.subscribe({
      name: 'quiet',
      maxAttempts: 1,
      pollIntervalMs: 1000,
      handler: (event) => {
        if (failing && event.data === 1) throw new Error('bad');
        seen.push(event.data);
      },
    });
    let polls = 0;
    subscription.events.on((event) => {
      if (event.type === 'caught-up') polls++;
    });
    await subscription.caughtUp;
    assert.equal(subscription.parkedCount, 2);
    const listed = listings;
    const before = polls;
    for (let poll = before + 1; poll <= before + 10; poll++) {
      await clock.advance(1000);
      await waitUntil(() => polls >= poll, `poll ${poll}`);
    }
    assert.equal(listings, listed, 'ten polls with events parked read none of them');
    failing = false;
    // As another process would ask (the CLI): the subscription learns of it at its next poll.
    assert.equal(await store.retryParked('quiet', 'all'), 2);
    await clock.advance(1000);
    await waitUntil(() => seen.length === 2, 'the events are handled at the next poll');
    assert.deepEqual(seen, [1, 2]);
    assert.equal(subscription.parkedCount, 0);
    await subscription.stop();
  });

  it('finds the poison event of a failing batch by handling the batch one event at a time', async () => {
    const { store } = openStore();
    await append(store, 'a-1', 1, 2, 3);
    await append(store, 'b-1', 4, 5);
    const batches: unknown[][] = [];
    const subscription = store.subscribe({
      name: 'batches',
      maxAttempts: 2,
      retryBackoff: constantBackoff(0),
      handleBatch: (events) => {
        const values = events.map((e) => e.data);
        if (values.includes(2)) throw new Error('bad');
        batches.push(values);
      },
    });
    await subscription.caughtUp;
    // Two failed attempts at [1..5], then one event at a time: 2 fails twice and is parked, 3 waits behind it.
    assert.deepEqual(batches, [[1], [4], [5]]);
    assert.deepEqual(
      (await subscription.parked()).map((p) => [p.position, p.reason, p.attempts]),
      [
        [2, 'failed', 2],
        [3, 'blocked', 0],
      ],
    );
    await append(store, 'b-1', 6, 7);
    await waitUntil(() => batches.length === 4, 'later batches are whole again');
    assert.deepEqual(batches[3], [6, 7]);
    await subscription.stop();
  });

  it('orders by the keys keysOf gives, across streams', async () => {
    const { store } = openStore();
    await store.appendToStream('order-1', [{ type: 'N', data: { customer: 'c1', n: 1 } }]);
    await store.appendToStream('payment-1', [{ type: 'N', data: { customer: 'c1', n: 2 } }]);
    await store.appendToStream('order-2', [{ type: 'N', data: { customer: 'c2', n: 3 } }]);
    const seen: number[] = [];
    const subscription = store.subscribe({
      name: 'by-customer',
      maxAttempts: 1,
      keysOf: (event) => (event.data as { customer: string }).customer,
      handler: (event) => {
        const { n } = event.data as { n: number };
        if (n === 1) throw new Error('bad');
        seen.push(n);
      },
    });
    await subscription.caughtUp;
    assert.deepEqual(seen, [3], "c1's payment waits behind its order, though in another stream");
    assert.deepEqual(
      (await subscription.parked()).map((p) => [p.streamName, p.keys]),
      [
        ['order-1', ['c1']],
        ['payment-1', ['c1']],
      ],
    );
    await subscription.stop();
  });

  it('refuses bad options', () => {
    const { store } = openStore();
    const handler = () => {};
    assert.throws(() => store.subscribe({ handler: 'no' as never }), /handler/);
    assert.throws(() => store.subscribe({}), /handler/);
    assert.throws(() => store.subscribe({ handler, handleBatch: () => {} }), /handler/);
    assert.throws(() => store.subscribe({ handler, batchSize: 0 }), /batchSize/);
    assert.throws(() => store.subscribe({ handler, from: { after: -1 } }), /from/);
    assert.throws(() => store.subscribe({ handler, name: '' }), /name/);
    assert.throws(() => store.subscribe({ handler, maxAttempts: 0 }), /maxAttempts/);
    assert.throws(() => store.subscribe({ handler, onPoison: 'ignore' as never }), /onPoison/);
    assert.throws(() => store.subscribe({ handler, keysOf: 'stream' as never }), /keysOf/);
    assert.throws(() => store.retryParked('', 'all'), /subscription/);
    assert.throws(() => store.skipParked('s', [0]), /selection/);
    assert.throws(() => store.skipParked('s', 'some' as never), /selection/);
  });
});
