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
const PAYMENT = `payment-of-${ORDER}`;
const TOTAL = 39_800;

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
  paymentStarted: (id: string, paymentId = PAYMENT): RegistrationProcessEvent => ({
    id,
    type: 'OrderPaymentStarted',
    data: { orderId: ORDER, paymentId, totalCents: TOTAL },
  }),
  paid: (
    id: string,
    paymentId = PAYMENT,
    amountCents = TOTAL,
    currency = 'USD',
  ): RegistrationProcessEvent => ({
    id,
    type: 'PaymentCompleted',
    data: { paymentId, paymentSourceId: ORDER, amountCents, currency },
  }),
  paymentRejected: (id: string, paymentId = PAYMENT): RegistrationProcessEvent => ({
    id,
    type: 'PaymentRejected',
    data: { paymentId, paymentSourceId: ORDER },
  }),
  orderExpired: (id: string): RegistrationProcessEvent => ({
    id,
    type: 'OrderExpired',
    data: { orderId: ORDER },
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
    ...notStarted,
    stage: 'AwaitingReservationConfirmation',
    conferenceId: CONFERENCE,
    reservationAutoExpiration: EXPIRES_AT,
    seatReservationCommandId: 'reservation-1',
  };
  const reservationReceived: RegistrationProcessState = {
    ...awaiting,
    stage: 'ReservationConfirmationReceived',
  };
  /** Reserved, with a payment started for the order's total. */
  const paying: RegistrationProcessState = {
    ...reservationReceived,
    paymentId: PAYMENT,
    paymentTotalCents: TOTAL,
  };
  const paymentReceived: RegistrationProcessState = {
    ...paying,
    stage: 'PaymentConfirmationReceived',
    paidPaymentId: PAYMENT,
  };
  const orderConfirmed: RegistrationProcessState = { ...paymentReceived, stage: 'OrderConfirmed' };
  const expiring: RegistrationProcessState = { ...reservationReceived, stage: 'Expiring' };
  const refund = (paymentId: string, reason: string) => ({
    type: 'RefundThirdPartyProcessorPayment',
    data: { paymentId, reason },
  });
  const reservation = { conferenceId: CONFERENCE, reservationId: ORDER };

  test('starts NotStarted, with the order id as the process id', () => {
    assert.deepEqual(notStarted, {
      stage: 'NotStarted',
      orderId: ORDER,
      conferenceId: '',
      reservationAutoExpiration: 0,
      seatReservationCommandId: '',
      paymentId: '',
      paymentTotalCents: 0,
      paidPaymentId: '',
      expiryPassed: false,
    });
  });

  describe('OrderPlaced', () => {
    test('reserves the seats under a remembered command id, dropped a minute after the reservation ends, and schedules the expiry after the grace period', () => {
      const expiration = T0 + 22 * 60_000;
      const event = events.placed('placed', expiration);
      assert.deepEqual(handle(notStarted, event), {
        state: {
          ...notStarted,
          stage: 'AwaitingReservationConfirmation',
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

    test('placed again, for this conference or another, in any later stage, changes nothing (F3, F9)', () => {
      for (const state of [awaiting, reservationReceived, paymentReceived, orderConfirmed, expiring]) {
        assert.equal(handle(state, events.placed('placed-again')), undefined);
        assert.equal(handle(state, events.placed('placed-again', EXPIRES_AT, 'conference-2')), undefined);
      }
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

    test('answering another reservation, or none, after the awaited one is skipped', () => {
      for (const state of [reservationReceived, paymentReceived, orderConfirmed, expiring]) {
        for (const correlationId of ['reservation-0', undefined]) {
          assert.equal(handle(state, events.reserved('reserved', correlationId)), undefined);
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

    test('is skipped once the payment is in, the order over, or before the order is placed', () => {
      for (const state of [paymentReceived, orderConfirmed, expiring, notStarted]) {
        assert.equal(handle(state, events.updated('updated')), undefined);
      }
    });
  });

  describe('OrderPaymentStarted and PaymentRejected', () => {
    test('a started payment is remembered, with the total it is for', () => {
      assert.deepEqual(handle(reservationReceived, events.paymentStarted('started')), { state: paying });
      assert.equal(handle(paying, events.paymentStarted('started-again')), undefined);
      assert.equal(handle(orderConfirmed, events.paymentStarted('late', 'payment-2')), undefined);
    });

    test("a rejected payment frees the order's seats to change again; another payment's rejection is skipped", () => {
      assert.deepEqual(handle(paying, events.paymentRejected('rejected')), {
        state: reservationReceived,
        send: [{ type: 'CancelOrderPayment', data: { orderId: ORDER, paymentId: PAYMENT } }],
      });
      assert.equal(handle(paying, events.paymentRejected('rejected', 'payment-2')), undefined);
      assert.equal(handle(paymentReceived, events.paymentRejected('rejected')), undefined);
    });
  });

  describe('PaymentCompleted', () => {
    test("the order's payment, for its total, confirms the order with what was paid", () => {
      assert.deepEqual(handle(paying, events.paid('paid')), {
        state: paymentReceived,
        send: [
          {
            type: 'ConfirmOrder',
            data: { orderId: ORDER, paymentId: PAYMENT, amountCents: TOTAL, currency: 'USD' },
          },
        ],
      });
    });

    test('the same payment again is skipped; a second payment is owed back, never thrown (finding 1)', () => {
      assert.equal(handle(paymentReceived, events.paid('paid-again')), undefined);
      assert.equal(handle(orderConfirmed, events.paid('paid-again')), undefined);
      for (const state of [paymentReceived, orderConfirmed]) {
        assert.deepEqual(handle(state, events.paid('paid-twice', 'payment-2')), {
          send: [refund('payment-2', 'The order was already paid.')],
        });
      }
    });

    test('a payment of another amount or currency is owed back and confirms nothing (finding 2)', () => {
      assert.deepEqual(handle(paying, events.paid('paid', PAYMENT, 100)), {
        send: [refund(PAYMENT, 'The amount paid does not match the order total.')],
      });
      assert.deepEqual(handle(paying, events.paid('paid', PAYMENT, TOTAL, 'EUR')), {
        send: [refund(PAYMENT, 'The amount paid does not match the order total.')],
      });
      assert.deepEqual(handle(paying, events.paid('paid', 'payment-2')), {
        send: [refund('payment-2', 'The payment is not the one started for the order.')],
      });
    });

    test('a payment that came after the order could take it confirms nothing, though the expiry is not here yet', () => {
      // The payment owes itself back (PaymentRefundDue comes with it): the order expires when its timeout arrives.
      const late = events.paid('paid');
      const lateData = { ...(late.data as object), late: true };
      assert.equal(handle(paying, { ...late, data: lateData } as RegistrationProcessEvent), undefined);
    });

    test('a payment while the seats are not reserved, or once the order is expiring, is owed back', () => {
      for (const state of [notStarted, awaiting, expiring]) {
        assert.deepEqual(handle(state, events.paid('paid')), {
          send: [refund(PAYMENT, 'The order could not be paid at this stage.')],
        });
      }
    });
  });

  describe('OrderConfirmed', () => {
    test('after the payment, or after the reservation of a free order, commits the seats and waits for the expiry time', () => {
      for (const state of [paymentReceived, reservationReceived]) {
        assert.deepEqual(handle(state, events.confirmed('confirmed')), {
          state: { ...state, stage: 'OrderConfirmed' },
          send: [{ type: 'CommitSeatReservation', data: reservation }],
        });
      }
    });

    test('once the expiry time has passed (an expiry that raced it), commits the seats and completes', () => {
      for (const state of [expiring, { ...paymentReceived, expiryPassed: true }]) {
        assert.deepEqual(handle(state, events.confirmed('confirmed')), {
          send: [{ type: 'CommitSeatReservation', data: reservation }],
          complete: true,
        });
      }
    });

    test('is skipped when repeated or before the order is placed', () => {
      for (const state of [notStarted, orderConfirmed]) {
        assert.equal(handle(state, events.confirmed('confirmed')), undefined);
      }
    });
  });

  describe('ExpireRegistrationProcess and OrderExpired', () => {
    test('rejects an order not paid for; its seats go only once it has expired', () => {
      for (const state of [awaiting, reservationReceived, paying]) {
        assert.deepEqual(handle(state, events.expired('expired')), {
          state: { ...state, stage: 'Expiring' },
          send: [{ type: 'RejectOrder', data: { orderId: ORDER } }],
        });
      }
      assert.deepEqual(handle(expiring, events.orderExpired('order-expired')), {
        send: [{ type: 'CancelSeatReservation', data: reservation }],
        complete: true,
      });
    });

    test('never releases the seats of a confirmed order, nor of one whose payment was accepted (finding 1)', () => {
      assert.deepEqual(handle(orderConfirmed, events.expired('expired')), { complete: true });
      assert.deepEqual(handle(paymentReceived, events.expired('expired')), {
        state: { ...paymentReceived, expiryPassed: true },
      });
      assert.equal(handle(orderConfirmed, events.orderExpired('order-expired')), undefined);
    });
  });

  test('every event belongs to the process of its order', () => {
    const correlated = [
      events.placed('e1'),
      events.updated('e2'),
      events.reserved('e3', undefined),
      events.paid('e4'),
      events.confirmed('e5'),
      events.paymentStarted('e8'),
      events.paymentRejected('e9'),
      events.orderExpired('e10'),
    ].map((event) => registrationProcess.correlate(event));
    assert.deepEqual(correlated, Array(8).fill(ORDER));
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
      'CancelOrderPayment',
      'RefundThirdPartyProcessorPayment',
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
    const { clock, manager, store, sent, sentTypes, read } = await run(t);
    await manager.handle(events.placed('placed'));
    const [reservation] = sent;
    assert.deepEqual(reservation?.data, {
      conferenceId: CONFERENCE,
      reservationId: ORDER,
      seats: TWO_GENERAL,
    });
    assert.equal((await read()).state.seatReservationCommandId, reservation?.id);

    await manager.handle(events.reserved('reserved', reservation?.id));
    await manager.handle(events.paymentStarted('payment-started'));
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
    const confirmed = await read();
    assert.equal(confirmed.completed, false, 'it lives on until the expiry time, for late payments');
    assert.equal(confirmed.state.stage, 'OrderConfirmed');
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(async () => (await read()).completed, 'the process completes at the expiry time');
    assert.equal(sent.length, 4, 'and sends nothing then');
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
    const { clock, manager, messaging, sent, sentTypes, read } = await reservedOrder(t);
    const dueAt = EXPIRES_AT + RESERVATION_GRACE_MS;
    const [timeout] = await messaging.queue('timeouts').peek();
    assert.equal(timeout?.availableAt, dueAt);

    await clock.advance(dueAt - clock.now() - 1);
    assert.equal((await messaging.queue('timeouts').peek())[0]?.state, 'scheduled', 'not due yet');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved']);
    assert.equal((await read()).completed, false);

    await clock.advance(1);
    await waitUntil(async () => (await read()).state.stage === 'Expiring', 'the registration expires');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved', 'RejectOrder']);
    // The seats go once the order has expired (a confirmed order never does).
    await manager.handle(events.orderExpired('order-expired'));
    assert.deepEqual(sentTypes(), [
      'MakeSeatReservation',
      'MarkSeatsAsReserved',
      'RejectOrder',
      'CancelSeatReservation',
    ]);
    assert.deepEqual(sent[3]?.data, { conferenceId: CONFERENCE, reservationId: ORDER });
    assert.equal((await read()).completed, true);
  });

  test('a payment completed after the expiry confirms nothing and is owed back (F22)', async (t) => {
    const { clock, manager, sent, sentTypes, read } = await reservedOrder(t);
    await manager.handle(events.paymentStarted('payment-started'));
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(async () => (await read()).state.stage === 'Expiring', 'the registration expires');

    await manager.handle(events.paid('paid-late'));
    assert.equal(sentTypes().includes('ConfirmOrder'), false);
    assert.deepEqual(sent.at(-1)?.data, {
      paymentId: PAYMENT,
      reason: 'The order could not be paid at this stage.',
    });
    await manager.handle(events.orderExpired('order-expired'));
    assert.equal((await read()).completed, true);
  });

  test('an expiry that races the confirmation never releases the seats (finding 1)', async (t) => {
    const { clock, manager, sentTypes, read } = await reservedOrder(t);
    await manager.handle(events.paymentStarted('payment-started'));
    await manager.handle(events.paid('paid'));
    // The expiry comes before the order's confirmation is routed: it waits for it.
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(async () => (await read()).state.expiryPassed === true, 'the expiry is handled');
    assert.ok(!sentTypes().includes('RejectOrder') && !sentTypes().includes('CancelSeatReservation'));
    await manager.handle(events.confirmed('confirmed'));
    assert.equal(sentTypes().at(-1), 'CommitSeatReservation');
    assert.equal((await read()).completed, true);
    // A second accepted payment now finds the process over; one before that is owed back (see the table).
    assert.ok(!sentTypes().includes('CancelSeatReservation'));
  });

  test('a duplicate OrderPlaced changes nothing, also once the process is complete (F9)', async (t) => {
    const { clock, manager, seen, sentTypes, read } = await run(t);
    const placed = events.placed('placed');
    assert.equal((await manager.handle(placed)).outcome, 'started');
    assert.equal((await manager.handle(placed)).outcome, 'duplicate', 'the same event delivered again');
    assert.equal((await manager.handle(events.placed('placed-republished'))).outcome, 'handled');
    assert.deepEqual(sentTypes(), ['MakeSeatReservation'], 'published again under another id: no command');
    const before = await read();
    await manager.handle(events.placed('placed-elsewhere', EXPIRES_AT, 'conference-2'));
    assert.deepEqual((await read()).state, before.state);

    await manager.handle(events.reserved('reserved', before.state.seatReservationCommandId));
    await manager.handle(events.confirmed('confirmed'));
    await clock.advance(EXPIRES_AT + RESERVATION_GRACE_MS - clock.now());
    await waitUntil(async () => (await read()).completed, 'the process completes at the expiry time');
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

    await manager.handle(events.paymentStarted('payment-started'));
    await manager.handle(events.paid('paid'));
    assert.deepEqual(sentTypes(), ['MakeSeatReservation', 'MarkSeatsAsReserved', 'ConfirmOrder']);
  });
});
