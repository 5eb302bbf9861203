import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import {
  CommandBus,
  type CommandEnvelope,
  EventStore,
  MemoryEventStoreBackend,
  type ProcessContext,
  ProcessManager,
  type ProcessManagerEvent,
  ProcessRouter,
  queueTimeoutScheduler,
} from '@stratus/eventsourcing';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { RESERVATION_GRACE_MS, RESERVATION_WINDOW_MS, type SeatQuantity } from './contracts.js';
import { InvalidOperationError } from './errors.js';
import {
  type RegistrationProcessEvent,
  type RegistrationProcessState,
  registrationProcess,
  registrationProcessDefinition,
} from './registration-process.js';

const T0 = Date.UTC(2026, 5, 1, 9, 0);
const ORDER = 'order-1';
const CONFERENCE = 'conference-1';
const EXPIRES_AT = T0 + RESERVATION_WINDOW_MS;
const TWO_GENERAL: readonly SeatQuantity[] = [{ seatTypeId: 'general', quantity: 2 }];
const THREE_GENERAL: readonly SeatQuantity[] = [{ seatTypeId: 'general', quantity: 3 }];

/** The events of ORDER, each with the id given (a redelivery repeats it). */
const events = {
  placed: (
    id: string,
    reservationAutoExpiration = EXPIRES_AT,
    conferenceId = CONFERENCE,
  ): RegistrationProcessEvent => ({
    id,
    type: 'OrderPlaced',
    data: {
      orderId: ORDER,
      conferenceId,
      seats: TWO_GENERAL,
      reservationAutoExpiration,
      accessCode: 'K3X9QP',
    },
  }),
  updated: (id: string, seats = THREE_GENERAL): RegistrationProcessEvent => ({
    id,
    type: 'OrderUpdated',
    data: { orderId: ORDER, seats },
  }),
  /** `correlationId`: the MakeSeatReservation answered; undefined for a reply that carries none. */
  reserved: (
    id: string,
    correlationId: string | undefined,
    reservationDetails = TWO_GENERAL,
  ): RegistrationProcessEvent => ({
    id,
    type: 'SeatsReserved',
    data: {
      conferenceId: CONFERENCE,
      reservationId: ORDER,
      reservationDetails,
      availableSeatsChanged: reservationDetails.map((s) => ({ ...s, quantity: -s.quantity })),
    },
    metadata: correlationId === undefined ? {} : { correlationId },
  }),
  paid: (id: string): RegistrationProcessEvent => ({
    id,
    type: 'PaymentCompleted',
    data: { paymentId: `payment-of-${ORDER}`, paymentSourceId: ORDER },
  }),
  confirmed: (id: string): RegistrationProcessEvent => ({
    id,
    type: 'OrderConfirmed',
    data: { orderId: ORDER },
  }),
  expired: (id: string): RegistrationProcessEvent => ({
    id,
    type: 'ExpireRegistrationProcess',
    data: { orderId: ORDER },
  }),
};

describe('registrationProcess.handle (the transition table)', () => {
  /** A context whose ids name the event and key, so a test can tell which event derived them. */
  const contextOf = (event: RegistrationProcessEvent, now = T0): ProcessContext => ({
    processId: ORDER,
    now,
    version: 1,
    isTimeout: event.type === 'ExpireRegistrationProcess',
    id: (key) => `${event.id}/${key}`,
  });
  const handle = (state: RegistrationProcessState, event: RegistrationProcessEvent, now = T0) =>
    registrationProcess.handle(state, event, contextOf(event, now));

  const notStarted = registrationProcess.initialState(ORDER);
  const awaiting: RegistrationProcessState = {
    stage: 'AwaitingReservationConfirmation',
    orderId: ORDER,
    conferenceId: CONFERENCE,
    reservationAutoExpiration: EXPIRES_AT,
    seatReservationCommandId: 'reservation-1',
  };
  const reservationReceived: RegistrationProcessState = {
    ...awaiting,
    stage: 'ReservationConfirmationReceived',
  };
  const paymentReceived: RegistrationProcessState = { ...awaiting, stage: 'PaymentConfirmationReceived' };
  const reservation = { conferenceId: CONFERENCE, reservationId: ORDER };

  test('starts NotStarted, with the order id as the process id', () => {
    assert.deepEqual(notStarted, {
      stage: 'NotStarted',
      orderId: ORDER,
      conferenceId: '',
      reservationAutoExpiration: 0,
      seatReservationCommandId: '',
    });
  });

  describe('OrderPlaced', () => {
    test('reserves the seats under a remembered command id, dropped a minute after the reservation ends, and schedules the expiry after the grace period', () => {
      const expiration = T0 + 22 * 60_000;
      const event = events.placed('placed', expiration);
      assert.deepEqual(handle(notStarted, event), {
        state: {
          stage: 'AwaitingReservationConfirmation',
          orderId: ORDER,
          conferenceId: CONFERENCE,
          reservationAutoExpiration: expiration,
          seatReservationCommandId: 'placed/MakeSeatReservation',
        },
        send: [
          {
            type: 'MakeSeatReservation',
            data: { conferenceId: CONFERENCE, reservationId: ORDER, seats: TWO_GENERAL },
            id: 'placed/MakeSeatReservation',
            expiresAt: expiration + 60_000,
          },
        ],
        schedule: [
          {
            event: { type: 'ExpireRegistrationProcess', data: { orderId: ORDER } },
            at: expiration + RESERVATION_GRACE_MS,
          },
        ],
      });
      assert.ok(expiration + RESERVATION_GRACE_MS - T0 > 32 * 60_000, 'the Journey: a delay over 32 minutes');
    });

    test('rejects an order whose reservation has already expired, and completes', () => {
      for (const expiration of [T0 - 60_000, T0]) {
        assert.deepEqual(handle(notStarted, events.placed('placed', expiration)), {
          state: { ...notStarted, conferenceId: CONFERENCE, reservationAutoExpiration: expiration },
          send: [{ type: 'RejectOrder', data: { orderId: ORDER } }],
          complete: true,
        });
      }
    });

    test('placed again for the same conference, in any later stage, changes nothing (F3, F9)', () => {
      for (const state of [awaiting, reservationReceived, paymentReceived]) {
        assert.equal(handle(state, events.placed('placed-again')), undefined);
      }
    });

    test('placed again for another conference throws', () => {
      assert.throws(
        () => handle(awaiting, events.placed('placed-again', EXPIRES_AT, 'conference-2')),
        InvalidOperationError,
      );
    });
  });

  describe('SeatsReserved', () => {
    const markSeatsAsReserved = (seats: readonly SeatQuantity[]) => ({
      type: 'MarkSeatsAsReserved',
      data: { orderId: ORDER, seats, expiration: EXPIRES_AT },
    });

    test('answering the awaited reservation marks the seats reserved on the order', () => {
      const partly = [{ seatTypeId: 'general', quantity: 1 }];
      assert.deepEqual(handle(awaiting, events.reserved('reserved', 'reservation-1', partly)), {
        state: reservationReceived,
        send: [markSeatsAsReserved(partly)],
      });
    });

    test('without a correlation id it is taken as the answer (as in the Journey)', () => {
      assert.deepEqual(handle(awaiting, events.reserved('reserved', undefined)), {
        state: reservationReceived,
        send: [markSeatsAsReserved(TWO_GENERAL)],
      });
    });

    test('answering another reservation while awaiting is skipped: no command, no new state (F7)', () => {
      assert.equal(handle(awaiting, events.reserved('reserved', 'reservation-0')), undefined);
    });

    test('a second copy of the answer already handled is skipped in any later stage (F8)', () => {
      for (const state of [reservationReceived, paymentReceived]) {
        assert.equal(handle(state, events.reserved('reserved-again', 'reservation-1')), undefined);
      }
    });

    test('answering another reservation, or none, after the awaited one throws', () => {
      for (const state of [reservationReceived, paymentReceived]) {
        for (const correlationId of ['reservation-0', undefined]) {
          assert.throws(() => handle(state, events.reserved('reserved', correlationId)), {
            name: InvalidOperationError.name,
            message: 'Cannot handle seat reservation at this stage.',
          });
        }
      }
    });
  });

  describe('OrderUpdated', () => {
    test('reserves the new seats under a new command id and awaits that answer', () => {
      for (const state of [awaiting, reservationReceived]) {
        assert.deepEqual(handle(state, events.updated('updated')), {
          state: { ...awaiting, seatReservationCommandId: 'updated/MakeSeatReservation' },
          send: [
            {
              type: 'MakeSeatReservation',
              data: { ...reservation, seats: THREE_GENERAL },
              id: 'updated/MakeSeatReservation',
            },
          ],
        });
      }
    });

    test('throws once the payment is in, or before the order is placed', () => {
      for (const state of [paymentReceived, notStarted]) {
        assert.throws(() => handle(state, events.updated('updated')), {
          name: InvalidOperationError.name,
          message: 'The order cannot be updated at this stage.',
        });
      }
    });
  });

  describe('PaymentCompleted', () => {
    test('after the reservation, confirms the order', () => {
      assert.deepEqual(handle(reservationReceived, events.paid('paid')), {
        state: paymentReceived,
        send: [{ type: 'ConfirmOrder', data: { orderId: ORDER } }],
      });
    });

    test('throws in any other stage', () => {
      for (const state of [notStarted, awaiting, paymentReceived]) {
        assert.throws(() => handle(state, events.paid('paid')), InvalidOperationError);
      }
    });
  });

  describe('OrderConfirmed', () => {
    test('after the payment, or after the reservation of a free order, commits the seats and completes', () => {
      for (const state of [paymentReceived, reservationReceived]) {
        assert.deepEqual(handle(state, events.confirmed('confirmed')), {
          send: [{ type: 'CommitSeatReservation', data: reservation }],
          complete: true,
        });
      }
    });

    test('throws before the seats are reserved', () => {
      for (const state of [notStarted, awaiting]) {
        assert.throws(() => handle(state, events.confirmed('confirmed')), InvalidOperationError);
      }
    });
  });

  describe('ExpireRegistrationProcess', () => {
    test('rejects the order, releases the seats and completes, whatever the stage', () => {
      for (const state of [awaiting, reservationReceived, paymentReceived]) {
        assert.deepEqual(handle(state, events.expired('expired')), {
          send: [
            { type: 'RejectOrder', data: { orderId: ORDER } },
            { type: 'CancelSeatReservation', data: reservation },
          ],
          complete: true,
        });
      }
    });
  });

  test('every event belongs to the process of its order', () => {
    const correlated = [
      events.placed('e1'),
      events.updated('e2'),
      events.reserved('e3', undefined),
      events.paid('e4'),
      events.confirmed('e5'),
    ].map((event) => registrationProcess.correlate(event));
    assert.deepEqual(correlated, [ORDER, ORDER, ORDER, ORDER, ORDER]);
    assert.equal(registrationProcess.correlate(events.expired('e6')), undefined, 'only as a timeout');
    const unrelated = { id: 'e7', type: 'OrderTotalsCalculated', data: { orderId: ORDER } };
    assert.equal(registrationProcess.correlate(unrelated as unknown as RegistrationProcessEvent), undefined);
    assert.deepEqual(registrationProcess.startedBy, ['OrderPlaced']);
  });

  test('the grace period is an option', () => {
    const process = registrationProcessDefinition({ graceMs: 60_000 });
    const event = events.placed('placed');
    assert.deepEqual(process.handle(notStarted, event, contextOf(event))?.schedule, [
      { event: { type: 'ExpireRegistrationProcess', data: { orderId: ORDER } }, at: EXPIRES_AT + 60_000 },
    ]);
    assert.throws(() => registrationProcessDefinition({ graceMs: -1 }), InvalidOptionsError);
  });
});

describe('the registration process on a ProcessManager', () => {
  /** A manager over a memory store whose command handlers only record, with timeouts on a virtual clock. */
  async function run(t: TestContext) {
    const clock = new VirtualClock({ now: T0 });
    const store = new EventStore({ backend: new MemoryEventStoreBackend(), clock });
    const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock });
    await messaging.createQueue('timeouts');
    const bus = new CommandBus({ clock });
    const sent: CommandEnvelope[] = [];
    for (const type of [
      'MakeSeatReservation',
      'MarkSeatsAsReserved',
      'ConfirmOrder',
      'CommitSeatReservation',
      'RejectOrder',
      'CancelSeatReservation',
    ]) {
      bus.register(type, (command) => void sent.push(command));
    }
    const manager = new ProcessManager({
      definition: registrationProcess,
      store,
      commands: bus,
      timeouts: queueTimeoutScheduler(messaging, 'timeouts'),
    });
    const seen: ProcessManagerEvent[] = [];
    manager.events.on((event) => seen.push(event));
    const timeouts = new ProcessRouter([manager]).consumeTimeouts(messaging, 'timeouts', {
      idlePollMs: 60_000,
    });
    t.after(async () => {
      await timeouts.close();
      await messaging.backend.close();
    });
    const sentTypes = () => sent.map((command) => command.type);
    /** The id of the latest MakeSeatReservation: the correlation id of the SeatsReserved that answers it. */
    const lastReservationId = () => sent.findLast((command) => command.type === 'MakeSeatReservation')?.id;
    const read = () => manager.read(ORDER);
    return {
      clock,
      store,
      messaging,
      manager,
      sent,
      seen,
      sentTypes,
      lastReservationId,
      read,
    };
  }

  /** Places the order and has its seats reserved. */
  async function reservedOrder(t: TestContext) {
    const harness = await run(t);
    await harness.manager.handle(events.placed('placed'));
    await harness.manager.handle(events.reserved('reserved', harness.lastReservationId()));
    return harness;
  }

  test('happy path: placed, reserved, paid, confirmed; each step sends its command once', async (t) => {
    const { manager, store, sent, sentTypes, read } = await run(t);
    await manager.handle(events.placed('placed'));
    const [reservation] = sent;
    assert.deepEqual(reservation?.data, {
      conferenceId: CONFERENCE,
      reservationId: ORDER,
      seats: TWO_GENERAL,
    });
    assert.equal((await read()).state.seatReservationCommandId, reservation?.id);

    await manager.handle(events.reserved('reserved', reservation?.id));
    await manager.handle(events.paid('paid'));
    await manager.handle(events.confirmed('confirmed'));
    assert.deepEqual(sentTypes(), [
      'MakeSeatReservation',
      'MarkSeatsAsReserved',
      'ConfirmOrder',
      'CommitSeatReservation',
    ]);
    assert.deepEqual(sent[1]?.data, { orderId: ORDER, seats: TWO_GENERAL, expiration: EXPIRES_AT });
    assert.deepEqual(sent[3]?.data, { conferenceId: CONFERENCE, reservationId: ORDER });
    const done = await read();
    assert.equal(done.completed, true);
    assert.equal(done.state.stage, 'PaymentConfirmationReceived');
    assert.ok(
      (await store.readStream(`registrationProcess-${ORDER}`)).length > 0,
      'stored as its own stream',
    );
  });

  test('an order placed already expired is rejected at once, with no expiry scheduled', async (t) => {
    const { manager, messaging, sentTypes, read } = await run(t);
    await manager.handle(events.placed('placed', T0 - 60_000));
    assert.deepEqual(sentTypes(), ['RejectOrder']);
    assert.equal((await read()).completed, true);
    assert.deepEqual(await messaging.queue('timeouts').peek(), []);
  });

  test('a reservation never paid expires at expiration + grace, not before: order rejected, seats released', async (t) => {
    const { clock, messaging, sent, sentTypes, read } = await reservedOrder(t);
    const dueAt = EXPIRES_AT + RESERVATION_GRACE_MS;
    const [timeout] = await messaging.queue('timeouts').peek();
    assert.equal(timeout?.availableAt, dueAt);

    await clock.advance(dueAt - clock.now() - 1);
    assert.equal((await messaging.queue('timeouts').peek())[0]?.state, 'scheduled', 'not due yet');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved']);
    assert.equal((await read()).completed, false);

    await clock.advance(1);
    await waitUntil(async () => (await read()).completed, 'the registration expired');
    assert.deepEqual(sentTypes(), [
      'MakeSeatReservation',
      'MarkSeatsAsReserved',
      'RejectOrder',
      'CancelSeatReservation',
    ]);
    assert.deepEqual(sent[3]?.data, { conferenceId: CONFERENCE, reservationId: ORDER });
  });

  test('a payment completed after the expiry confirms nothing (F22)', async (t) => {
    const { clock, manager, sentTypes, read } = await reservedOrder(t);
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(async () => (await read()).completed, 'the registration expired');

    const late = await manager.handle(events.paid('paid-late'));
    assert.deepEqual(late, { outcome: 'ignored', processId: ORDER, reason: 'completed' });
    assert.equal(sentTypes().includes('ConfirmOrder'), false);
  });

  test('OrderConfirmed drops the expiry: the timeout comes back later and does nothing', async (t) => {
    const { clock, manager, seen, sentTypes } = await reservedOrder(t);
    await manager.handle(events.paid('paid'));
    await manager.handle(events.confirmed('confirmed'));
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(
      () => seen.some((event) => event.type === 'ignored' && event.reason === 'stale-timeout'),
      'the timeout came back and was dropped',
    );
    assert.deepEqual(sentTypes(), [
      'MakeSeatReservation',
      'MarkSeatsAsReserved',
      'ConfirmOrder',
      'CommitSeatReservation',
    ]);
  });

  test('a duplicate OrderPlaced changes nothing, also once the process is complete (F9)', async (t) => {
    const { manager, seen, sentTypes, read } = await run(t);
    const placed = events.placed('placed');
    assert.equal((await manager.handle(placed)).outcome, 'started');
    assert.equal((await manager.handle(placed)).outcome, 'duplicate', 'the same event delivered again');
    assert.equal((await manager.handle(events.placed('placed-republished'))).outcome, 'handled');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation'], 'published again under another id: no command');
    const before = await read();
    await assert.rejects(
      manager.handle(events.placed('placed-elsewhere', EXPIRES_AT, 'conference-2')),
      InvalidOperationError,
    );
    assert.deepEqual((await read()).state, before.state);

    await manager.handle(events.reserved('reserved', before.state.seatReservationCommandId));
    await manager.handle(events.confirmed('confirmed'));
    assert.equal((await read()).completed, true);
    // The Journey started a second process here (quirk 5); the order id now maps to the completed one.
    const afterCompletion = await manager.handle(events.placed('placed-after-completion'));
    assert.deepEqual(afterCompletion, { outcome: 'ignored', processId: ORDER, reason: 'completed' });
    assert.equal(seen.filter((event) => event.type === 'started').length, 1);
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved', 'CommitSeatReservation']);
  });

  test('after an OrderUpdated, the answer to the first reservation arriving late is skipped (F7)', async (t) => {
    const { manager, sent, sentTypes, lastReservationId, read } = await run(t);
    await manager.handle(events.placed('placed'));
    const first = lastReservationId();
    await manager.handle(events.updated('updated'));
    const second = lastReservationId();
    assert.notEqual(second, first);

    await manager.handle(events.reserved('reserved-first', first));
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MakeSeatReservation']);
    assert.equal((await read()).state.stage, 'AwaitingReservationConfirmation');

    await manager.handle(events.reserved('reserved-second', second, THREE_GENERAL));
    assert.deepEqual(sent.at(-1), {
      type: 'MarkSeatsAsReserved',
      id: sent.at(-1)?.id,
      data: { orderId: ORDER, seats: THREE_GENERAL, expiration: EXPIRES_AT },
    });
    assert.equal((await read()).state.stage, 'ReservationConfirmationReceived');
  });

  test('a second copy of SeatsReserved after the transition is skipped, and the order goes on (F8)', async (t) => {
    const { manager, sentTypes, lastReservationId, read } = await reservedOrder(t);
    const copy = await manager.handle(events.reserved('reserved-copy', lastReservationId()));
    assert.equal(copy.outcome, 'handled');
    assert.equal((await read()).state.stage, 'ReservationConfirmationReceived');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved']);

    await manager.handle(events.paid('paid'));
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved', 'ConfirmOrder']);
  });
});
