import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { OrderEvent, SeatQuantity } from './contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from './errors.js';
import { type OrderCommand, orderDecider } from './order.js';
import { given, replay } from './spec.js';

const orderId = 'order-1';
const conferenceId = 'conference-1';
const now = 1_750_000_000_000;
const expiration = now + 15 * 60_000;
const GENERAL = 'seat-general';
const WORKSHOP = 'seat-workshop';
const FREE = 'seat-free';
const prices = new Map([
  [GENERAL, 19_900],
  [WORKSHOP, 50_000],
  [FREE, 0],
]);

const register = (
  seats: readonly SeatQuantity[],
  extra: { reservationWindowMs?: number } = {},
): OrderCommand => ({
  type: 'RegisterToConference',
  data: { orderId, conferenceId, seats, now, accessCode: 'ABC123', prices, ...extra },
});
const markAsReserved = (seats: readonly SeatQuantity[]): OrderCommand => ({
  type: 'MarkSeatsAsReserved',
  data: { orderId, seats, expiration: expiration + 1, prices },
});
const reject: OrderCommand = { type: 'RejectOrder', data: { orderId } };
const paymentId = 'payment-1';
const confirm: OrderCommand = {
  type: 'ConfirmOrder',
  data: { orderId, paymentId, amountCents: 99_500, currency: 'USD' },
};
const startPayment = (id = paymentId): OrderCommand => ({
  type: 'StartOrderPayment',
  data: { orderId, paymentId: id },
});
const cancelPayment: OrderCommand = { type: 'CancelOrderPayment', data: { orderId, paymentId } };
const assign = (firstName: string, lastName: string, email: string): OrderCommand => ({
  type: 'AssignRegistrantDetails',
  data: { orderId, firstName, lastName, email },
});

const general = (quantity: number): SeatQuantity => ({ seatTypeId: GENERAL, quantity });
const workshop = (quantity: number): SeatQuantity => ({ seatTypeId: WORKSHOP, quantity });

// The history of an order for 5 general seats (and no workshop seat, as the form posts every seat type).
const placed: OrderEvent[] = [
  {
    type: 'OrderPlaced',
    data: {
      orderId,
      conferenceId,
      seats: [general(5), workshop(0)],
      reservationAutoExpiration: expiration,
      accessCode: 'ABC123',
    },
  },
  {
    type: 'OrderTotalsCalculated',
    data: {
      orderId,
      lines: [
        { seatTypeId: GENERAL, quantity: 5, unitPriceCents: 19_900, lineTotalCents: 99_500 },
        { seatTypeId: WORKSHOP, quantity: 0, unitPriceCents: 50_000, lineTotalCents: 0 },
      ],
      totalCents: 99_500,
      isFreeOfCharge: false,
    },
  },
];
const reserved: OrderEvent[] = [
  ...placed,
  {
    type: 'OrderReservationCompleted',
    data: { orderId, reservationExpiration: expiration, seats: [general(5)] },
  },
];
const paying: OrderEvent[] = [
  ...reserved,
  { type: 'OrderPaymentStarted', data: { orderId, paymentId, totalCents: 99_500 } },
];
const confirmed: OrderEvent[] = [...paying, { type: 'OrderConfirmed', data: { orderId } }];
const expired: OrderEvent[] = [...reserved, { type: 'OrderExpired', data: { orderId } }];

function isError(type: new (...args: never[]) => Error, message: string | RegExp) {
  return (error: unknown) =>
    error instanceof type &&
    (typeof message === 'string' ? error.message === message : message.test(error.message));
}

describe('RegisterToConference', () => {
  test('places a new order expiring 15 minutes from now, then prices it with its zero lines', () => {
    assert.deepEqual(given(orderDecider).when(register([general(5), workshop(0)])), placed);
  });

  test('holds the seats for the window the command gives', () => {
    const [event] = given(orderDecider).when(register([general(1)], { reservationWindowMs: 60_000 }));
    assert.equal(event?.type === 'OrderPlaced' && event.data.reservationAutoExpiration, now + 60_000);
  });

  test('marks an order of free seats free of charge', () => {
    const [, totals] = given(orderDecider).when(register([{ seatTypeId: FREE, quantity: 2 }]));
    assert.deepEqual(totals, {
      type: 'OrderTotalsCalculated',
      data: {
        orderId,
        lines: [{ seatTypeId: FREE, quantity: 2, unitPriceCents: 0, lineTotalCents: 0 }],
        totalCents: 0,
        isFreeOfCharge: true,
      },
    });
  });

  test('updates the seats of a placed order and prices them again', () => {
    assert.deepEqual(given(orderDecider, placed).when(register([general(20), workshop(1)])), [
      { type: 'OrderUpdated', data: { orderId, seats: [general(20), workshop(1)] } },
      {
        type: 'OrderTotalsCalculated',
        data: {
          orderId,
          lines: [
            { seatTypeId: GENERAL, quantity: 20, unitPriceCents: 19_900, lineTotalCents: 398_000 },
            { seatTypeId: WORKSHOP, quantity: 1, unitPriceCents: 50_000, lineTotalCents: 50_000 },
          ],
          totalCents: 448_000,
          isFreeOfCharge: false,
        },
      },
    ]);
  });

  test('updates a fully reserved order too', () => {
    const events = given(orderDecider, reserved).when(register([general(4)]));
    assert.deepEqual(
      events.map((event) => event.type),
      ['OrderUpdated', 'OrderTotalsCalculated'],
    );
    assert.deepEqual(given(orderDecider, [...reserved, ...events]).state.seats, [general(4)]);
  });

  test('refuses to change a confirmed or an expired order, or to move it to another conference', () => {
    assert.throws(
      () => given(orderDecider, confirmed).when(register([general(1)])),
      isError(InvalidOperationError, 'Cannot modify a confirmed order.'),
    );
    assert.throws(
      () => given(orderDecider, expired).when(register([general(1)])),
      isError(InvalidOperationError, 'Cannot modify an expired order.'),
    );
    const elsewhere: OrderCommand = {
      type: 'RegisterToConference',
      data: { orderId, conferenceId: 'conference-2', seats: [general(1)], now, accessCode: 'X', prices },
    };
    assert.throws(() => given(orderDecider, placed).when(elsewhere), InvalidOperationError);
  });

  test('requires at least one seat', () => {
    for (const seats of [[], [general(0), workshop(0)]]) {
      assert.throws(
        () => given(orderDecider).when(register(seats)),
        (error: unknown) =>
          isError(ValidationError, 'One or more items are required.')(error) &&
          (error as ValidationError).fields.seats === 'One or more items are required.',
      );
    }
  });

  test('refuses negative, fractional and repeated quantities, and more than 20 of a type', () => {
    for (const seats of [[general(-1)], [general(1.5)], [general(1), general(2)]]) {
      assert.throws(
        () => given(orderDecider, placed).when(register(seats)),
        isError(ValidationError, 'Invalid registration.'),
      );
    }
    assert.throws(
      () => given(orderDecider).when(register([general(21)])),
      (error: unknown) => error instanceof ValidationError && error.fields.seats !== undefined,
    );
    assert.equal(given(orderDecider).when(register([general(20)])).length, 2);
  });

  test('refuses a seat type the conference does not have', () => {
    assert.throws(
      () => given(orderDecider).when(register([general(1), { seatTypeId: 'seat-x', quantity: 0 }])),
      isError(ValidationError, "Invalid seat type ID 'seat-x' for conference with ID 'conference-1'"),
    );
  });

  test('writes only the contract fields of the seats into the events', () => {
    const seat = { seatTypeId: GENERAL, quantity: 1, label: 'from the form' };
    const [event] = given(orderDecider).when(register([seat]));
    assert.deepEqual(event?.type === 'OrderPlaced' && event.data.seats, [general(1)]);
  });
});

describe('MarkSeatsAsReserved', () => {
  test('refuses a reservation with a negative or fractional quantity, or a seat type twice', () => {
    for (const seats of [[general(-1)], [general(1.5)], [general(1), general(2)]]) {
      assert.throws(() => given(orderDecider, placed).when(markAsReserved(seats)), ValidationError);
    }
  });

  test('with fewer seats than asked: partially reserved, priced again on the reserved seats', () => {
    assert.deepEqual(given(orderDecider, placed).when(markAsReserved([general(3)])), [
      {
        type: 'OrderPartiallyReserved',
        data: { orderId, reservationExpiration: expiration + 1, seats: [general(3)] },
      },
      {
        type: 'OrderTotalsCalculated',
        data: {
          orderId,
          lines: [{ seatTypeId: GENERAL, quantity: 3, unitPriceCents: 19_900, lineTotalCents: 59_700 }],
          totalCents: 59_700,
          isFreeOfCharge: false,
        },
      },
    ]);
  });

  test('with every seat asked (zero lines aside): reservation completed, totals kept', () => {
    assert.deepEqual(given(orderDecider, placed).when(markAsReserved([general(5)])), [
      {
        type: 'OrderReservationCompleted',
        data: { orderId, reservationExpiration: expiration + 1, seats: [general(5)] },
      },
    ]);
    const state = given(orderDecider, reserved).state;
    assert.deepEqual(state.seats, [general(5)]);
    assert.equal(state.totals.lines.length, 2, 'the zero line stays priced');
  });

  test('a reservation of another quantity than asked, even more, is partial', () => {
    const events = given(orderDecider, placed).when(markAsReserved([general(6)]));
    assert.equal(events[0]?.type, 'OrderPartiallyReserved');
  });

  test('with nothing reserved: partially reserved with no seats, now free of charge', () => {
    const events = given(orderDecider, placed).when(markAsReserved([]));
    assert.deepEqual(
      events.map((event) => event.type),
      ['OrderPartiallyReserved', 'OrderTotalsCalculated'],
    );
    const state = given(orderDecider, [...placed, ...events]).state;
    assert.deepEqual(state.seats, []);
    assert.deepEqual(state.totals, { lines: [], totalCents: 0, isFreeOfCharge: true });
  });

  test('refuses a confirmed or expired order, and an order that does not exist', () => {
    assert.throws(
      () => given(orderDecider, confirmed).when(markAsReserved([general(5)])),
      isError(InvalidOperationError, 'Cannot modify a confirmed order.'),
    );
    assert.throws(
      () => given(orderDecider, expired).when(markAsReserved([general(5)])),
      isError(InvalidOperationError, 'Cannot modify an expired order.'),
    );
    assert.throws(() => given(orderDecider).when(markAsReserved([general(5)])), NotFoundError);
  });
});

describe('RejectOrder', () => {
  test('expires a placed or a reserved order', () => {
    const orderExpired = [{ type: 'OrderExpired', data: { orderId } }];
    assert.deepEqual(given(orderDecider, placed).when(reject), orderExpired);
    assert.deepEqual(given(orderDecider, reserved).when(reject), orderExpired);
    assert.equal(given(orderDecider, expired).state.expired, true);
  });

  test('does nothing for an order that does not exist or has already expired', () => {
    assert.deepEqual(given(orderDecider).when(reject), []);
    assert.deepEqual(given(orderDecider, expired).when(reject), []);
  });

  test('does nothing for a confirmed order: an expiry that raced the confirmation leaves it sold', () => {
    assert.deepEqual(given(orderDecider, confirmed).when(reject), []);
  });
});

describe('StartOrderPayment and CancelOrderPayment', () => {
  test('opens a payment of the total, once, and then refuses seat changes until it is cancelled', () => {
    assert.deepEqual(given(orderDecider, reserved).when(startPayment()), paying.slice(reserved.length));
    assert.deepEqual(given(orderDecider, paying).when(startPayment()), []);
    assert.throws(
      () => given(orderDecider, paying).when(register([general(1)])),
      isError(InvalidOperationError, 'A payment is in progress for this order: its seats cannot change.'),
    );
    const cancelled: OrderEvent[] = [...paying, ...given(orderDecider, paying).when(cancelPayment)];
    assert.equal(cancelled.at(-1)?.type, 'OrderPaymentCancelled');
    assert.equal(given(orderDecider, cancelled).when(register([general(1)]))[0]?.type, 'OrderUpdated');
    assert.deepEqual(given(orderDecider, reserved).when(cancelPayment), [], 'no payment to cancel');
  });

  test('refuses an order whose seats are not reserved yet, a free one and a settled one', () => {
    assert.throws(
      () => given(orderDecider, placed).when(startPayment()),
      isError(InvalidOperationError, 'The seats of the order are not reserved yet.'),
    );
    assert.throws(
      () => given(orderDecider, confirmed).when(startPayment('payment-2')),
      InvalidOperationError,
    );
    assert.throws(() => given(orderDecider, expired).when(startPayment()), InvalidOperationError);
  });
});

describe('ConfirmOrder', () => {
  test('confirms a reserved order paid by its payment for its total, with the seats reserved', () => {
    assert.deepEqual(given(orderDecider, paying).when(confirm), [
      { type: 'OrderConfirmed', data: { orderId, seats: [general(5)] } },
    ]);
    assert.equal(given(orderDecider, confirmed).state.confirmed, true);
  });

  test('refuses a paid order confirmed without its payment, by another, or for another amount', () => {
    const confirmWith = (data: object): OrderCommand => ({
      type: 'ConfirmOrder',
      data: { orderId, paymentId, amountCents: 99_500, currency: 'USD', ...data },
    });
    assert.throws(
      () => given(orderDecider, reserved).when(confirm),
      isError(InvalidOperationError, 'The order is confirmed by the payment started for it.'),
    );
    assert.throws(
      () => given(orderDecider, paying).when(confirmWith({ paymentId: 'payment-2' })),
      InvalidOperationError,
    );
    for (const paid of [{ amountCents: 100 }, { amountCents: undefined }, { currency: 'EUR' }]) {
      assert.throws(
        () => given(orderDecider, paying).when(confirmWith(paid)),
        isError(InvalidOperationError, 'The amount paid does not match the order total.'),
      );
    }
    assert.throws(
      () => given(orderDecider, placed).when(confirm),
      isError(InvalidOperationError, 'The seats of the order are not reserved yet.'),
    );
  });

  test('does nothing for an order already confirmed (a redelivered command)', () => {
    assert.deepEqual(given(orderDecider, confirmed).when(confirm), []);
  });

  test('refuses an expired order (the Journey confirmed it) and an order that does not exist', () => {
    assert.throws(
      () => given(orderDecider, expired).when(confirm),
      isError(InvalidOperationError, 'Cannot confirm an expired order.'),
    );
    assert.throws(() => given(orderDecider).when(confirm), NotFoundError);
  });
});

describe('AssignRegistrantDetails', () => {
  test('assigns the registrant', () => {
    assert.deepEqual(given(orderDecider, placed).when(assign('foo', 'bar', 'foo@bar.com')), [
      {
        type: 'OrderRegistrantAssigned',
        data: { orderId, firstName: 'foo', lastName: 'bar', email: 'foo@bar.com' },
      },
    ]);
  });

  test('names every missing or malformed field at once', () => {
    assert.throws(
      () => given(orderDecider, placed).when(assign(' ', '', 'foo@bar')),
      (error: unknown) =>
        error instanceof ValidationError &&
        error.fields.firstName !== undefined &&
        error.fields.lastName !== undefined &&
        error.fields.email === 'The provided email address is not valid.',
    );
    assert.throws(
      () => given(orderDecider, placed).when(assign('foo', 'bar', '')),
      (error: unknown) => error instanceof ValidationError && Object.keys(error.fields).join() === 'email',
    );
  });

  test('refuses an order that does not exist', () => {
    assert.throws(() => given(orderDecider).when(assign('foo', 'bar', 'foo@bar.com')), NotFoundError);
  });

  test('after confirmation only the owner can change the registrant (the e-mail finds the order)', () => {
    assert.throws(
      () => given(orderDecider, confirmed).when(assign('foo', 'bar', 'foo@bar.com')),
      isError(
        InvalidOperationError,
        'The registrant of a confirmed order can only be changed by the conference owner.',
      ),
    );
    const byOwner: OrderCommand = {
      type: 'AssignRegistrantDetails',
      data: { orderId, firstName: 'foo', lastName: 'bar', email: 'foo@bar.com', byOwner: true },
    };
    assert.deepEqual(given(orderDecider, confirmed).when(byOwner), [
      {
        type: 'OrderRegistrantAssigned',
        data: { orderId, firstName: 'foo', lastName: 'bar', email: 'foo@bar.com' },
      },
    ]);
    // Before confirmation (and once expired, when it no longer matters) the registrant may still change it.
    assert.equal(given(orderDecider, reserved).when(assign('foo', 'bar', 'foo@bar.com')).length, 1);
    assert.equal(given(orderDecider, expired).when(assign('foo', 'bar', 'foo@bar.com')).length, 1);
  });
});

describe('the order state', () => {
  test('exposes what later steps need, and survives JSON (for snapshots)', () => {
    const history: OrderEvent[] = [
      ...placed,
      { type: 'OrderRegistrantAssigned', data: { orderId, firstName: 'a', lastName: 'b', email: 'a@b.cd' } },
      ...confirmed.slice(placed.length),
    ];
    const state = given(orderDecider, history).state;
    assert.deepEqual(state, {
      placed: true,
      conferenceId,
      seats: [general(5)],
      totals: {
        lines: [
          { seatTypeId: GENERAL, quantity: 5, unitPriceCents: 19_900, lineTotalCents: 99_500 },
          { seatTypeId: WORKSHOP, quantity: 0, unitPriceCents: 50_000, lineTotalCents: 0 },
        ],
        totalCents: 99_500,
        isFreeOfCharge: false,
      },
      confirmed: true,
      expired: false,
      reserved: true,
      openPaymentId: '',
    });
    assert.deepEqual(JSON.parse(JSON.stringify(state)), state);
  });

  test('starts as an order that does not exist', () => {
    assert.deepEqual(orderDecider.initialState(), {
      placed: false,
      conferenceId: '',
      seats: [],
      totals: { lines: [], totalCents: 0, isFreeOfCharge: true },
      confirmed: false,
      expired: false,
      reserved: false,
      openPaymentId: '',
    });
  });
});

describe('any sequence of commands (property)', () => {
  const seatTypeId = fc.constantFrom(GENERAL, WORKSHOP, FREE, 'seat-unknown');
  const seats = fc.array(
    fc.record({ seatTypeId, quantity: fc.integer({ min: -1, max: 22 }) }, { noNullPrototype: true }),
    { maxLength: 4 },
  );
  const command = fc.oneof(
    seats.map((s) => register(s)),
    seats.map((s) => markAsReserved(s)),
    fc.constant(reject),
    fc.constant(confirm),
    fc.constantFrom(startPayment(), startPayment('payment-2'), cancelPayment),
    fc.constantFrom(assign('foo', 'bar', 'foo@bar.com'), assign('', 'bar', 'nope')),
  );

  test('keeps the order consistent, and its state is the replay of its events', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 25 }), (commands) => {
        const events: OrderEvent[] = [];
        let state = orderDecider.initialState();
        for (const next of commands) {
          try {
            const decided = given(orderDecider, events).when(next);
            events.push(...decided);
            state = decided.reduce(orderDecider.evolve, state);
          } catch (error) {
            // Refusals are domain errors only (not, say, a TypeError from mutating a frozen state).
            assert.ok(
              error instanceof ValidationError ||
                error instanceof InvalidOperationError ||
                error instanceof NotFoundError,
              String(error),
            );
          }
        }
        assert.deepEqual(replay(orderDecider, events), state);
        assert.deepEqual(JSON.parse(JSON.stringify(state)), state);

        const types = events.map((event) => event.type);
        assert.ok(types.length === 0 || types[0] === 'OrderPlaced');
        assert.ok(types.filter((type) => type === 'OrderPlaced').length <= 1);
        assert.ok(!(state.confirmed && state.expired));
        assert.ok(types.filter((type) => type === 'OrderConfirmed' || type === 'OrderExpired').length <= 1);
        // Seats never change while a payment is open.
        let open = false;
        for (const type of types) {
          if (type === 'OrderPaymentStarted') open = true;
          if (type === 'OrderPaymentCancelled' || type === 'OrderConfirmed') open = false;
          assert.ok(!(open && type === 'OrderUpdated'));
        }
        // Once confirmed or expired, only the registrant may still change; once confirmed, not by the registrant.
        const final = types.findIndex((type) => type === 'OrderConfirmed' || type === 'OrderExpired');
        if (final >= 0) assert.ok(types.slice(final + 1).every((type) => type === 'OrderRegistrantAssigned'));
        if (types[final] === 'OrderConfirmed') assert.equal(types.length, final + 1);
        for (const event of events) {
          if (event.type !== 'OrderTotalsCalculated') continue;
          const { lines, totalCents, isFreeOfCharge } = event.data;
          assert.equal(
            totalCents,
            lines.reduce((sum, line) => sum + line.lineTotalCents, 0),
          );
          assert.equal(isFreeOfCharge, totalCents === 0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
