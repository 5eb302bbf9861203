import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { immediateBackoff } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { EventStoreBackend, RecordedEvent } from './backend.js';
import { PoisonEventError } from './errors.js';
import { EventStore } from './event-store.js';
import type { SubscriptionEvent, SubscriptionOptions } from './subscription.js';

/**
 * Subscriptions over a backend: a poison event is parked and the others go on, each stream in order; parked events
 * survive a restart and are retried or skipped from the subscription or from the store (as another process would).
 * Each backend's test file calls it with a factory that opens a store (shared by the tests, which start at its end).
 */
export function subscriptionContract(label: string, open: () => Promise<EventStoreBackend>): void {
  describe(`Subscription over ${label}`, () => {
    let store: EventStore;
    let clock: VirtualClock;
    let counter = 0;

    before(async () => {
      clock = new VirtualClock({ now: 1_750_000_000_000 });
      store = new EventStore({ backend: await open(), clock });
    });
    after(async () => {
      await store?.close();
    });

    /**
     * Moves virtual time on a second at a time until `condition` holds: a subscription that was reading when the
     * clock moved (real I/O) sets its poll timer afterwards, from the new time.
     */
    async function advanceUntil(condition: () => boolean | Promise<boolean>, what: string) {
      await waitUntil(async () => {
        if (await condition()) return true;
        await clock.advance(1000);
        return false;
      }, what);
    }

    /** A subscription from the store's end, failing at once (no backoff), with its events recorded. */
    async function follow(options: Partial<SubscriptionOptions> & { name: string }) {
      const events: SubscriptionEvent[] = [];
      const subscription = store.subscribe({
        from: { after: await store.headPosition() },
        retryBackoff: immediateBackoff(),
        maxAttempts: 3,
        handler: () => {},
        ...options,
      } as SubscriptionOptions);
      subscription.events.on((event) => events.push(event));
      return { subscription, events };
    }

    it('parks one poison event among 10,000, handles the 9,999 others, each stream in order', async () => {
      const run = ++counter;
      const head = await store.headPosition();
      // 100 rounds of one event in each of 100 streams: the streams' events interleave in the log.
      for (let round = 0; round < 100; round++) {
        await Promise.all(
          Array.from({ length: 100 }, (_, s) =>
            store.appendToStream(`poison${run}-${s}`, [{ type: 'N', data: { round } }]),
          ),
        );
      }
      const poison = `poison${run}-37`;
      const seen = new Map<string, number[]>();
      let handled = 0;
      const { subscription, events } = await follow({
        name: `poison-${run}`,
        from: { after: head },
        handler: (event: RecordedEvent) => {
          const { round } = event.data as { round: number };
          // NUL and a lone surrogate: text no backend stores as such.
          if (event.streamName === poison && round === 99) throw new Error('poison\u0000\ud800');
          const rounds = seen.get(event.streamName) ?? [];
          rounds.push(round);
          seen.set(event.streamName, rounds);
          handled++;
        },
      });
      await subscription.caughtUp;
      assert.equal(handled, 9_999);
      assert.equal(seen.size, 100);
      for (const [stream, rounds] of seen) {
        const expected = Array.from({ length: stream === poison ? 99 : 100 }, (_, round) => round);
        assert.deepEqual(rounds, expected, `${stream} in order`);
      }
      const parked = await subscription.parked();
      assert.equal(parked.length, 1);
      assert.equal(parked[0]?.streamName, poison);
      assert.equal(parked[0]?.reason, 'failed');
      assert.equal(parked[0]?.attempts, 3);
      assert.equal(parked[0]?.error, 'Error: poison\ufffd\ufffd');
      assert.equal(events.filter((e) => e.type === 'handler-failed').length, 3);
      assert.equal(events.filter((e) => e.type === 'event-parked').length, 1);
      assert.deepEqual(await store.parkedCounts().then((counts) => counts[`poison-${run}`]), 1);
      await subscription.stop();
    });

    it('parks the later events of a parked event’s stream behind it, across a restart, and retries them in order', async () => {
      const run = ++counter;
      const name = `retry-${run}`;
      const head = await store.headPosition();
      let broken = true;
      const seen: string[] = [];
      const handler = (event: RecordedEvent) => {
        const { n } = event.data as { n: number };
        if (broken && event.streamName === `bad${run}-1` && n === 1) throw new Error('not yet');
        seen.push(`${event.streamName}:${n}`);
      };
      const first = await follow({ name, from: { after: head }, handler });
      await store.appendToStream(`bad${run}-1`, [{ type: 'N', data: { n: 1 } }]);
      await store.appendToStream(`good${run}-1`, [{ type: 'N', data: { n: 1 } }]);
      await store.appendToStream(`bad${run}-1`, [{ type: 'N', data: { n: 2 } }]);
      await waitUntil(() => first.subscription.position === head + 3, 'the three events are passed');
      await first.subscription.stop();
      assert.deepEqual(seen, [`good${run}-1:1`]);
      // Restarted, it still holds the stream back: a new event of it is parked too.
      const second = await follow({ name, handler, from: 'start' });
      await second.subscription.caughtUp;
      await store.appendToStream(`bad${run}-1`, [{ type: 'N', data: { n: 3 } }]);
      await store.appendToStream(`good${run}-1`, [{ type: 'N', data: { n: 2 } }]);
      await waitUntil(() => seen.length === 2, 'the other stream goes on');
      const parked = await store.parked(name);
      assert.deepEqual(
        parked.map((p) => [p.position - head, p.reason]),
        [
          [1, 'failed'],
          [3, 'blocked'],
          [4, 'blocked'],
        ],
      );
      // A retry asked for in the store (as a tool in another process would) while the handler still fails.
      assert.equal(await store.retryParked(name), 3);
      await advanceUntil(
        () => second.events.some((e) => e.type === 'event-parked' && e.attempts === 4),
        'the retry fails again',
      );
      assert.deepEqual(seen, [`good${run}-1:1`, `good${run}-1:2`]);
      await waitUntil(
        async () => (await store.parked(name)).every((p) => !p.retryRequested),
        'the request lapses for the events behind it',
      );
      broken = false;
      assert.equal(await second.subscription.retryParked(), 3);
      await waitUntil(() => seen.length === 5, 'the parked events are handled');
      assert.deepEqual(seen.slice(2), [`bad${run}-1:1`, `bad${run}-1:2`, `bad${run}-1:3`]);
      // Each is taken off the lot once handled, so the last may still be on it for a moment.
      await waitUntil(async () => (await store.parked(name)).length === 0, 'the lot is empty');
      assert.equal(second.subscription.parkedCount, 0);
      await store.appendToStream(`bad${run}-1`, [{ type: 'N', data: { n: 4 } }]);
      await waitUntil(() => seen.length === 6, 'the stream flows again');
      await second.subscription.stop();
    });

    it('lets the events parked behind a skipped one through, in order', async () => {
      const run = ++counter;
      const name = `skip-${run}`;
      const seen: number[] = [];
      const { subscription } = await follow({
        name,
        handler: (event: RecordedEvent) => {
          const { n } = event.data as { n: number };
          if (n === 1) throw new Error('never');
          seen.push(n);
        },
      });
      await subscription.caughtUp;
      await store.appendToStream(`skip${run}-1`, [{ type: 'N', data: { n: 1 } }]);
      await store.appendToStream(`skip${run}-1`, [{ type: 'N', data: { n: 2 } }]);
      await waitUntil(async () => (await store.parked(name)).length === 2, 'both are parked');
      await clock.advance(1000);
      assert.deepEqual(seen, [], 'the blocked event waits while the failed one is parked');
      const [failed] = await store.parked(name);
      assert.equal(await store.skipParked(name, [failed?.position as number]), 1);
      await advanceUntil(() => seen.length === 1, 'the blocked event is handled');
      await store.appendToStream(`skip${run}-1`, [{ type: 'N', data: { n: 3 } }]);
      await waitUntil(() => seen.length === 2, 'the stream flows again');
      assert.deepEqual(seen, [2, 3]);
      assert.deepEqual(await store.parked(name), []);
      await subscription.stop();
    });

    it("with onPoison 'stop', stops with PoisonEventError and keeps its checkpoint before the event", async () => {
      const run = ++counter;
      const name = `stop-${run}`;
      const head = await store.headPosition();
      const { subscription, events } = await follow({
        name,
        onPoison: 'stop',
        handler: (event: RecordedEvent) => {
          if ((event.data as { n: number }).n === 2) throw new Error('poison');
        },
      });
      await store.appendToStream(`stop${run}-1`, [
        { type: 'N', data: { n: 1 } },
        { type: 'N', data: { n: 2 } },
      ]);
      const error = await subscription.done.then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof PoisonEventError);
      assert.equal(error.position, head + 2);
      assert.equal(error.attempts, 3);
      assert.ok(events.some((e) => e.type === 'stopped'));
      assert.equal(await store.backend.loadCheckpoint(name), head + 1);
      assert.deepEqual(await store.parked(name), []);
    });
  });
}
