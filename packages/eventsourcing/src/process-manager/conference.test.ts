/**
 * End to end: a conference registration driven by events from the store (a checkpointed subscription through the
 * router), its commands run by services on a CommandBus that append the next events, its expiry a scheduled
 * message on the virtual clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { CommandBus } from '../command-bus.js';
import { EventStore } from '../event-store.js';
import { MemoryEventStoreBackend } from '../memory/memory-event-store.js';
import { registerConferenceServices } from './fixtures/conference-services.js';
import {
  HAPPY_PATH_COMMANDS,
  RELEASE_BUFFER_MS,
  type RegistrationEvent,
  type RegistrationState,
  registrationProcess,
} from './fixtures/registration.js';
import { ProcessManager, type ProcessManagerEvent } from './process-manager.js';
import { ProcessRouter } from './router.js';
import { queueTimeoutScheduler } from './senders.js';

const T0 = Date.UTC(2026, 4, 4, 10, 0);
const EXPIRES_AT = T0 + 15 * 60_000;

async function conference(options: { autoPay?: boolean } = {}) {
  const clock = new VirtualClock({ now: T0 });
  const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
  const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock });
  await messaging.createQueue('timeouts');
  const bus = new CommandBus({ clock });
  const services = registerConferenceServices(bus, store, options);
  const manager = new ProcessManager<RegistrationState, RegistrationEvent>({
    definition: registrationProcess,
    store,
    commands: bus,
    timeouts: queueTimeoutScheduler(messaging, 'timeouts'),
  });
  const seen: ProcessManagerEvent[] = [];
  manager.events.on((event) => seen.push(event));
  const router = new ProcessRouter([manager]);
  const subscription = router.subscribe(store, { name: 'registration-router' });
  const timeouts = router.consumeTimeouts(messaging, 'timeouts', { idlePollMs: 60_000 });
  const types = async (stream: string) => (await store.readStream(stream)).map((event) => event.type);
  /** Waits until the router has routed everything appended so far. */
  const routed = () =>
    waitUntil(async () => subscription.position === (await store.headPosition()), 'the router caught up');
  const placeOrder = (orderId: string, eventId: string) =>
    store.appendToStream(`order-${orderId}`, [
      {
        id: eventId,
        type: 'OrderPlaced',
        data: { orderId, conferenceId: 'conf-1', seats: 2, reservationExpiresAt: EXPIRES_AT },
      },
    ]);
  const close = async () => {
    await subscription.stop();
    await timeouts.close();
  };
  return { clock, store, manager, services, seen, types, routed, placeOrder, close };
}

describe('a conference registration, end to end', () => {
  it('goes from order placed to seats committed and assignments created, once', async () => {
    const { store, manager, services, seen, types, routed, placeOrder, clock, close } = await conference();
    try {
      await placeOrder('o-1', 'placed-1');
      await waitUntil(async () => (await manager.read('o-1')).completed, 'the registration completed');
      assert.deepEqual(
        services.received.map((c) => c.type),
        HAPPY_PATH_COMMANDS,
      );
      assert.deepEqual(await types('order-o-1'), [
        'OrderPlaced',
        'OrderReservationCompleted',
        'OrderConfirmed',
      ]);
      assert.deepEqual(await types('seats-conf-1'), ['SeatsReserved', 'SeatsReservationCommitted']);
      const [reserved] = await store.readStream('seats-conf-1');
      assert.equal(
        reserved?.metadata.correlationId,
        services.received[0]?.id,
        'replies carry the command id',
      );

      // The Journey's quirks: a repeated OrderConfirmed and a repeated OrderPlaced change nothing now.
      await store.appendToStream('order-o-1', [
        { id: 'confirmed-again', type: 'OrderConfirmed', data: { orderId: 'o-1' } },
      ]);
      await placeOrder('o-1', 'placed-again');
      await routed();
      assert.deepEqual(await types('assignments-o-1'), ['SeatAssignmentsCreated']);
      assert.equal(services.received.length, 6);
      assert.equal(seen.filter((e) => e.type === 'started').length, 1);
      assert.equal(seen.filter((e) => e.type === 'ignored' && e.reason === 'completed').length, 2);

      // Its expiry comes back later and is dropped: the process is complete.
      await clock.advance(EXPIRES_AT + RELEASE_BUFFER_MS - T0);
      await waitUntil(
        () => seen.some((e) => e.type === 'ignored' && e.reason === 'stale-timeout'),
        'dropped',
      );
      assert.deepEqual(await types('order-o-1'), [
        'OrderPlaced',
        'OrderReservationCompleted',
        'OrderConfirmed',
        'OrderConfirmed',
        'OrderPlaced',
      ]);
    } finally {
      await close();
    }
  });

  it('expires an unpaid registration: rejects the order, releases the seats, then ignores a late payment', async () => {
    const { store, manager, services, seen, types, routed, placeOrder, clock, close } = await conference({
      autoPay: false,
    });
    try {
      await placeOrder('o-2', 'placed-2');
      await waitUntil(
        async () => (await manager.read('o-2')).state.stage === 'reservation-confirmed',
        'seats reserved, payment asked for',
      );
      await clock.advance(EXPIRES_AT + RELEASE_BUFFER_MS - T0);
      await waitUntil(async () => (await manager.read('o-2')).completed, 'the registration expired');
      assert.equal((await manager.read('o-2')).state.stage, 'expired');
      assert.deepEqual(await types('order-o-2'), [
        'OrderPlaced',
        'OrderReservationCompleted',
        'OrderExpired',
      ]);
      assert.deepEqual(await types('seats-conf-1'), ['SeatsReserved', 'SeatsReservationCancelled']);

      await store.appendToStream('payment-o-2', [
        { id: 'late', type: 'PaymentCompleted', data: { orderId: 'o-2' } },
      ]);
      await routed();
      assert.ok(seen.some((e) => e.type === 'ignored' && e.eventId === 'late' && e.reason === 'completed'));
      assert.deepEqual(
        services.received.map((c) => c.type).filter((t) => t === 'ConfirmOrder'),
        [],
      );
    } finally {
      await close();
    }
  });
});
