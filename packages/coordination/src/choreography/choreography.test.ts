import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import {
  MemoryMessageBackend,
  type MessageBackend,
  Messaging,
  type ReceivedMessage,
  SqliteMessageBackend,
} from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { sqliteFiles } from '../fixtures/sqlite-files.js';
import { Choreography } from './choreography.js';
import { SagaCorrelationView } from './correlation-view.js';
import { shop } from './fixtures/shop.js';
import type { SagaEventBody } from './saga-event.js';

const T0 = 1_750_000_000_000;
const { path: fileIn, open } = sqliteFiles('stratus-choreography-');
let files = 0;

const backends: Record<string, () => MessageBackend> = {
  memory: () => new MemoryMessageBackend(),
  // The fixture's database, not the backend's own: closed before the directory goes even if a test fails early.
  sqlite: () => new SqliteMessageBackend({ database: open(fileIn(`m-${++files}.db`)) }),
};

async function setup(backend: () => MessageBackend, faults: Parameters<typeof shop>[0] = {}) {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend: backend(), clock });
  const choreography = new Choreography({ messaging, topic: 'shop.orders' });
  await choreography.setup();
  const services = shop(faults);
  const view = new SagaCorrelationView({ participants: services.participants, stuckAfterMs: 60_000, clock });
  await choreography.runView(view);
  // Every message, to check correlation ids.
  const audit: ReceivedMessage<SagaEventBody>[] = [];
  await messaging.subscribe('audit', { topics: 'shop.orders' });
  messaging.consume<SagaEventBody>('audit', (message) => {
    audit.push(message);
  });
  return { clock, messaging, choreography, view, audit, ...services };
}

for (const [kind, backend] of Object.entries(backends)) {
  describe(`Choreography with three participants (${kind} messaging)`, () => {
    it('completes a saga through events only, and compensates in the others when a participant fails', async () => {
      const { messaging, choreography, view, audit, participants, ledger } = await setup(backend, {
        undeliverable: new Set(['o-2']),
        declined: new Set(['o-3']),
      });
      try {
        for (const participant of participants) await choreography.run(participant);
        await choreography.start('o-1', 'OrderPlaced', { items: 2 });
        await choreography.start('o-2', 'OrderPlaced', { items: 1 });
        await choreography.start('o-3', 'OrderPlaced', { items: 5 });
        await waitUntil(
          () =>
            ['o-1', 'o-2', 'o-3'].every((id) =>
              ['completed', 'compensated'].includes(view.get(id)?.status ?? ''),
            ),
          'all three sagas are over',
        );

        const o1 = view.get('o-1');
        assert.equal(o1?.status, 'completed');
        assert.deepEqual(
          o1?.events.map((e) => [e.participant, e.type, e.kind]),
          [
            ['initiator', 'OrderPlaced', 'started'],
            ['inventory', 'StockReserved', 'step'],
            ['payments', 'PaymentCharged', 'step'],
            ['shipping', 'OrderShipped', 'completed'],
          ],
        );
        assert.deepEqual(o1?.acted, ['inventory', 'payments']);

        const o2 = view.get('o-2');
        assert.equal(o2?.status, 'compensated');
        assert.deepEqual(o2?.failed, ['shipping']);
        assert.deepEqual([...(o2?.compensated ?? [])].sort(), ['inventory', 'payments']);
        assert.deepEqual(o2?.awaitingCompensation, []);

        const o3 = view.get('o-3');
        assert.equal(o3?.status, 'compensated');
        assert.deepEqual(o3?.acted, ['inventory']);
        assert.deepEqual(o3?.failed, ['payments']);
        assert.deepEqual(o3?.compensated, ['inventory']);

        assert.deepEqual(ledger.filter((e) => e.endsWith('o-2')).sort(), [
          'charge o-2',
          'refund o-2',
          'release stock o-2',
          'reserve stock o-2',
        ]);
        assert.deepEqual(
          ledger.filter((e) => e.endsWith('o-3')).sort(),
          ['release stock o-3', 'reserve stock o-3'],
          'a declined payment is never refunded',
        );
        await waitUntil(() => audit.length === 14, 'the audit queue got every message');
        for (const message of audit) assert.equal(message.correlationId, message.body.sagaId, 'CHO-6');
        assert.equal(new Set(audit.map((m) => m.id)).size, audit.length);
      } finally {
        await messaging.close({ timeoutMs: 1000 });
      }
    });
  });
}

describe('Choreography', () => {
  it('drops the events a redelivered message publishes again (the bus delivered it twice)', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const keys: string[] = [];
    const { clock, messaging, choreography, view, inventory, payments, shipping, ledger, calls } =
      await setup(backends.memory as () => MessageBackend, {
        // The first delivery is held past its lock, so the bus delivers the message again meanwhile.
        beforeReserve: async (_sagaId, key) => {
          keys.push(key);
          if (keys.length === 1) await held;
        },
      });
    try {
      await choreography.run(inventory, { consumer: { concurrency: 2, lockMs: 1000, autoRenew: false } });
      await choreography.run(payments);
      await choreography.run(shipping);
      await choreography.start('o-1', 'OrderPlaced');
      await waitUntil(() => keys.length === 1, 'the first delivery is held');
      await clock.advance(6000); // past the lock and the consumer's idle poll
      await waitUntil(() => view.get('o-1')?.status === 'completed', 'the second delivery finished the saga');
      release();
      await waitUntil(
        () => calls.filter((c) => c === 'inventory:OrderPlaced:o-1').length === 2,
        'both deliveries ran',
      );
      await clock.advance(6000);
      assert.equal(keys.length, 2);
      assert.equal(keys[0], keys[1], 'both deliveries had one idempotency key');
      assert.match(keys[0] ?? '', /^inventory:saga-[0-9a-f]{40}$/);
      assert.deepEqual(ledger, ['reserve stock o-1', 'charge o-1', 'ship o-1'], 'each effect once');
      assert.equal(
        calls.filter((c) => c === 'payments:StockReserved:o-1').length,
        1,
        'the second StockReserved was a duplicate the payments queue dropped',
      );
      assert.equal(view.get('o-1')?.events.length, 4);
    } finally {
      release();
      await messaging.close({ timeoutMs: 1000 });
    }
  });

  it('reports a saga stuck when no event came for stuckAfterMs (a participant failed silently)', async () => {
    const { clock, messaging, choreography, view, inventory, payments } = await setup(
      backends.memory as () => MessageBackend,
    );
    try {
      await choreography.run(inventory);
      await choreography.run(payments); // shipping is down: nobody reacts to PaymentCharged
      await choreography.start('o-9', 'OrderPlaced');
      await waitUntil(() => view.get('o-9')?.acted.length === 2, 'inventory and payments acted');
      assert.equal(view.get('o-9')?.stuck, false);
      assert.equal(view.get('o-9')?.status, 'in-progress');
      await clock.advance(59_999);
      assert.equal(view.get('o-9')?.stuck, false);
      await clock.advance(1);
      assert.equal(view.get('o-9')?.stuck, true);
      assert.deepEqual(
        view.list({ stuck: true }).map((t) => t.sagaId),
        ['o-9'],
      );
      assert.deepEqual(view.list({ status: 'completed' }), []);
    } finally {
      await messaging.close({ timeoutMs: 1000 });
    }
  });

  it('starts a saga once: starting it again publishes a duplicate that is dropped', async () => {
    const { messaging, choreography, view, participants, calls } = await setup(
      backends.memory as () => MessageBackend,
    );
    try {
      for (const participant of participants) await choreography.run(participant);
      await choreography.start('o-7', 'OrderPlaced');
      await choreography.start('o-7', 'OrderPlaced');
      await waitUntil(() => view.get('o-7')?.status === 'completed', 'the saga completed');
      assert.equal(calls.filter((c) => c.startsWith('inventory:OrderPlaced')).length, 1);
    } finally {
      await messaging.close({ timeoutMs: 1000 });
    }
  });

  it('refuses bad options', async () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    assert.throws(() => new Choreography({ messaging, topic: 'a.*' }), InvalidOptionsError);
    assert.throws(() => new Choreography({ messaging: {} as never, topic: 'a' }), InvalidOptionsError);
    assert.throws(() => new SagaCorrelationView({ participants: [], stuckAfterMs: 0 }), InvalidOptionsError);
    assert.throws(() => new SagaCorrelationView({ participants: 'x' as never }), InvalidOptionsError);
    const choreography = new Choreography({ messaging, topic: 'a' });
    await assert.rejects(choreography.start('', 'OrderPlaced'), InvalidOptionsError);
    await assert.rejects(choreography.start('o', ''), InvalidOptionsError);
  });
});
