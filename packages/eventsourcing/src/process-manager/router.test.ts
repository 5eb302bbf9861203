import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { waitUntil } from '@stratus/testkit';
import { EventPublisher } from '../event-publisher.js';
import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import type { ProcessDefinition, ProcessEvent } from './definition.js';
import { UnknownProcessManagerError } from './errors.js';
import { RecordingScheduler, RecordingSender } from './fixtures/helpers.js';
import {
  type RegistrationEvent,
  type RegistrationState,
  registrationProcess,
} from './fixtures/registration.js';
import { ProcessManager } from './process-manager.js';
import { ProcessRouter } from './router.js';

const EXPIRES_AT = Date.now() + 3_600_000;

/** A second process over the same events: one per conference, counting its orders. */
const conferenceTally: ProcessDefinition<
  { orders: number },
  ProcessEvent<'OrderPlaced', { conferenceId: string }>
> = {
  name: 'tally',
  startedBy: ['OrderPlaced'],
  correlate: (event) => (event.type === 'OrderPlaced' ? event.data.conferenceId : undefined),
  initialState: () => ({ orders: 0 }),
  handle: (state) => ({ state: { orders: state.orders + 1 } }),
};

function managers(store: EventStore) {
  const sender = new RecordingSender();
  const registration = new ProcessManager<RegistrationState, RegistrationEvent>({
    definition: registrationProcess,
    store,
    commands: sender,
    timeouts: new RecordingScheduler(),
  });
  const tally = new ProcessManager({ definition: conferenceTally, store, commands: sender });
  return { sender, registration, tally };
}

const placed = (orderId: string, conferenceId: string) => ({
  type: 'OrderPlaced',
  id: `placed-${orderId}`,
  data: { orderId, conferenceId, seats: 1, reservationExpiresAt: EXPIRES_AT },
});

describe('ProcessRouter', () => {
  it('refuses bad managers and timeouts for a manager it does not have', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    const { registration, tally } = managers(store);
    assert.throws(() => new ProcessRouter([]), InvalidOptionsError);
    assert.throws(() => new ProcessRouter([registration, registration]), /two process managers/);
    assert.throws(() => new ProcessRouter([{} as never]), InvalidOptionsError);
    const router = new ProcessRouter([registration, tally]);
    await assert.rejects(
      router.deliverTimeout({
        processName: 'nope',
        processId: 'a',
        timeoutId: 't',
        type: 'X',
        data: {},
        dueAt: 0,
      }),
      UnknownProcessManagerError,
    );
    assert.throws(() => router.subscribe(store, {} as never), /name/);
  });

  it('routes each event to every manager that correlates it, by correlation id', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    const { registration, tally, sender } = managers(store);
    const router = new ProcessRouter([registration, tally]);
    const results = await router.route(placed('o-1', 'conf-1'));
    assert.deepEqual(
      results.map((r) => [r.outcome, r.processId]),
      [
        ['started', 'o-1'],
        ['started', 'conf-1'],
      ],
    );
    await router.route(placed('o-2', 'conf-1'));
    assert.equal((await tally.read('conf-1')).state.orders, 2);
    assert.deepEqual(
      (await router.route({ id: 'p', type: 'PaymentCompleted', data: { orderId: 'o-9' } })).map(
        (r) => r.outcome,
      ),
      ['ignored', 'unrouted'],
      'no process o-9 and payments do not start one; the tally does not care',
    );
    assert.equal(sender.ofType('MakeSeatReservation').length, 2);
  });

  it('with concurrency, handles different processes at once and each process in order', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    const seen: string[] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // Records each handling; the first order's events wait until three processes are in flight at once.
    const tracing: ProcessDefinition<{ steps: number }, ProcessEvent<string, { orderId: string }>> = {
      name: 'trace',
      startedBy: ['Placed'],
      correlate: (event) => event.data.orderId,
      initialState: () => ({ steps: 0 }),
      handle: (state, event) => {
        seen.push(`${event.data.orderId}:${event.type}`);
        return { state: { steps: state.steps + 1 } };
      },
    };
    const manager = new ProcessManager({ definition: tracing, store, commands: new RecordingSender() });
    const handle = manager.handle.bind(manager);
    manager.handle = async (event) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      if (mostInFlight >= 3) open();
      if ((event.data as { orderId: string }).orderId === 'o-1') await gate;
      try {
        return await handle(event);
      } finally {
        inFlight--;
      }
    };
    for (const orderId of ['o-1', 'o-2', 'o-3']) {
      await store.appendToStream(`order-${orderId}`, [
        { type: 'Placed', data: { orderId } },
        { type: 'Paid', data: { orderId } },
      ]);
    }
    const subscription = new ProcessRouter([manager]).subscribe(store, { name: 'routed', concurrency: 4 });
    await subscription.caughtUp;
    assert.equal(mostInFlight, 3);
    for (const orderId of ['o-1', 'o-2', 'o-3']) {
      const mine = seen.filter((step) => step.startsWith(orderId));
      assert.deepEqual(mine, [`${orderId}:Placed`, `${orderId}:Paid`]);
      assert.equal((await manager.read(orderId)).state.steps, 2);
    }
    assert.throws(
      () => new ProcessRouter([manager]).subscribe(store, { name: 'x', concurrency: 0 }),
      /concurrency/,
    );
    await subscription.stop();
  });

  it('routes the events a publisher sends to a queue, a republished one recognised', async () => {
    const store = new EventStore({ backend: new MemoryEventStoreBackend() });
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    await messaging.createTopic('orders');
    await messaging.subscribe('registration-events', { topics: 'orders' });
    const publisher = new EventPublisher(store, { name: 'orders', messaging, topic: 'orders' });
    publisher.start();
    const { registration, tally, sender } = managers(store);
    const consumer = new ProcessRouter([registration, tally]).consumeEvents(messaging, 'registration-events');
    try {
      await store.appendToStream('order-o-1', [placed('o-1', 'conf-1')]);
      await waitUntil(async () => (await tally.read('conf-1')).version > 0, 'the event was routed');
      // The same recorded event arriving again (a consumer redelivery): each process sees a duplicate.
      const [event] = await store.readStream('order-o-1');
      await messaging.queue('registration-events').send(event, { id: 'redelivered' });
      await waitUntil(
        async () => (await messaging.queue('registration-events').stats()).length === 0,
        'drained',
      );
      assert.equal((await tally.read('conf-1')).state.orders, 1);
      assert.equal(sender.ofType('MakeSeatReservation').length, 1);
      assert.equal((await registration.read('o-1')).state.stage, 'awaiting-reservation');
    } finally {
      await consumer.close();
      await publisher.stop();
    }
  });
});
