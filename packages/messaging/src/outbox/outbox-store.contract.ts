import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flushMicrotasks, VirtualClock, waitUntil } from '@stratus/testkit';
import { MemoryMessageBackend } from '../memory/memory-backend.js';
import { Messaging } from '../messaging.js';
import type { MessageToSend } from '../outgoing.js';
import { type OutboxDestination, OutboxRelay, type OutboxStore } from './outbox.js';

export interface OutboxFixture {
  readonly store: OutboxStore;
  /** Writes in a transaction that commits. */
  addCommitted(destination: OutboxDestination, messages: MessageToSend<unknown>[]): Promise<void>;
  /** Writes in a transaction that then rolls back. */
  addRolledBack(destination: OutboxDestination, messages: MessageToSend<unknown>[]): Promise<void>;
  close(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1);

/**
 * What every outbox store must do, with the relay: run by the SQLite and PostgreSQL outbox tests. `open` gets a
 * clock and a table name of its own for each test.
 */
export function outboxStoreContract(
  label: string,
  open: (clock: VirtualClock, table: string) => Promise<OutboxFixture>,
): void {
  describe(`Outbox contract: ${label}`, () => {
    let counter = 0;
    const fixtures: OutboxFixture[] = [];
    let clock: VirtualClock;

    async function setup() {
      clock = new VirtualClock({ now: T0 });
      const fixture = await open(clock, `outbox_${process.pid}_${++counter}`);
      fixtures.push(fixture);
      const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
      await messaging.createQueue('orders');
      return { fixture, messaging, store: fixture.store };
    }

    before(() => {
      counter = Math.floor(Math.random() * 1e6);
    });
    after(async () => {
      for (const fixture of fixtures) await fixture.close();
    });

    const bodies = async (messaging: Messaging, queue = 'orders') =>
      (await messaging.queue(queue).receive({ max: 100 })).map((m) => m.body);

    it('keeps messages written in a transaction that committed, and only those', async () => {
      const { fixture, store } = await setup();
      await fixture.addRolledBack({ queue: 'orders' }, [{ body: 'ghost' }]);
      await fixture.addCommitted({ queue: 'orders' }, [
        { body: 'a' },
        { body: 'b', priority: 3, headers: { k: 'v' } },
      ]);
      const records = await store.read(10);
      assert.equal(records.length, 2);
      assert.deepEqual(records[0]?.destination, { queue: 'orders' });
      assert.equal(records[1]?.message.priority, 3);
      assert.deepEqual(records[1]?.message.headers, { k: 'v' });
      assert.ok((records[0]?.sequence ?? 0) < (records[1]?.sequence ?? 0));
      await clock.advance(1500);
      assert.deepEqual(await store.pending(clock.now()), { count: 2, oldestAgeMs: 1500 });
    });

    it('relays in order and deletes what it sent', async () => {
      const { fixture, messaging, store } = await setup();
      await messaging.createTopic('orders.placed');
      await messaging.subscribe('billing', { topics: 'orders.*' });
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 1 }, { body: 2 }]);
      await fixture.addCommitted({ topic: 'orders.placed' }, [{ body: 3 }]);
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 4 }]);
      const relay = new OutboxRelay({ store, messaging, clock });
      assert.equal(await relay.relayOnce(), 4);
      assert.deepEqual(await bodies(messaging), [1, 2, 4]);
      assert.deepEqual(await bodies(messaging, 'billing'), [3]);
      assert.equal((await store.pending(clock.now())).count, 0);
    });

    it('sends a record again after a crash between sending and deleting, and the destination drops the copy', async () => {
      const { fixture, messaging, store } = await setup();
      await fixture.addCommitted({ queue: 'orders' }, [
        { body: 'x', id: 'm-1' },
        { body: 'y', id: 'm-2' },
      ]);
      let crash = true;
      const crashing = new Proxy(store, {
        get(target, property) {
          if (property === 'remove') {
            return async (sequences: readonly number[]) => {
              if (crash) {
                crash = false;
                throw new Error('process died before deleting');
              }
              return target.remove(sequences);
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const relay = new OutboxRelay({ store: crashing, messaging, clock });
      await assert.rejects(relay.relayOnce(), /process died/);
      assert.equal(await relay.relayOnce(), 2);
      assert.deepEqual(await bodies(messaging), ['x', 'y']);
    });

    it('buries a record that can never be delivered and keeps going; requeued, it goes out', async () => {
      const { fixture, messaging, store } = await setup();
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 1 }]);
      await fixture.addCommitted({ queue: 'not-yet' }, [{ body: 2 }]);
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 3 }]);
      const relay = new OutboxRelay({ store, messaging, clock });
      assert.equal(await relay.relayOnce(), 2);
      assert.deepEqual(await bodies(messaging), [1, 3]);
      const [dead] = await store.listDead(10);
      assert.deepEqual(dead?.destination, { queue: 'not-yet' });
      assert.match(dead?.error ?? '', /does not exist/);
      await messaging.createQueue('not-yet');
      assert.equal(await store.requeueDead([dead?.sequence as number]), 1);
      assert.equal(await relay.relayOnce(), 1);
      assert.deepEqual(await bodies(messaging, 'not-yet'), [2]);
      assert.deepEqual(await store.listDead(10), []);
    });

    it('lets one relay at a time work; another takes over when the lease expires', async () => {
      const { fixture, messaging, store } = await setup();
      const first = new OutboxRelay({ store, messaging, clock, leaseMs: 10_000 });
      const second = new OutboxRelay({ store, messaging, clock, leaseMs: 10_000 });
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 1 }]);
      assert.equal(await first.relayOnce(), 1);
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 2 }]);
      assert.equal(await second.relayOnce(), 0, 'the first relay holds the lease');
      await clock.advance(10_000);
      assert.equal(await second.relayOnce(), 1, 'the first relay went quiet: its lease expired');
      assert.equal(await first.relayOnce(), 0);
      assert.deepEqual(await bodies(messaging), [1, 2]);
    });

    it('a started relay picks up new records on its own and stops cleanly', async () => {
      const { fixture, messaging, store } = await setup();
      const relay = new OutboxRelay({ store, messaging, clock, pollMs: 50 }).start();
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 'woken' }]);
      for (let i = 0; i < 100 && relay.relayed === 0; i++) {
        await clock.advance(50);
        await flushMicrotasks();
      }
      await waitUntil(() => relay.relayed === 1, 'the relay sent the record');
      await relay.stop();
      assert.deepEqual(await bodies(messaging), ['woken']);
      const other = new OutboxRelay({ store, messaging, clock });
      await fixture.addCommitted({ queue: 'orders' }, [{ body: 'next' }]);
      assert.equal(await other.relayOnce(), 1, 'stop released the lease');
    });

    it('rejects a bad destination or message when writing, not when relaying', async () => {
      const { fixture } = await setup();
      await assert.rejects(fixture.addCommitted({ queue: 'bad name' }, [{ body: 1 }]), {
        option: 'destination.queue',
      });
      await assert.rejects(fixture.addCommitted({ queue: 'orders' }, [{ body: 1, priority: 42 }]), {
        field: 'priority',
      });
      await assert.rejects(fixture.addCommitted({} as OutboxDestination, [{ body: 1 }]), {
        option: 'destination',
      });
    });
  });
}
