/**
 * The Order aggregate of the Registration context (stream `order-<orderId>`) as a decider. The caller passes in what
 * is not pure: the current time, the new order's access code and the conference's seat prices.
 *
 * Beyond the Journey: seats of an expired order cannot change, an expired order cannot be confirmed, and expiring
 * or confirming twice appends nothing, so a redelivered command is harmless. Its seats cannot change while a payment
 * is open, a paid order is confirmed only by the payment it opened and for its total, and expiring a confirmed order
 * does nothing (so a late expiry can never release sold seats).
 */
import type { Decider } from '@stratus/eventsourcing';
import {
  type CommandData,
  CURRENCY,
  MAX_SEATS_PER_TYPE,
  type OrderEvent,
  RESERVATION_WINDOW_MS,
  type SeatQuantity,
} from './contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from './errors.js';
import { assertValidPersonalInfo } from './personal-info.js';
import { type OrderTotals, priceOrder, type SeatPrices } from './pricing.js';

export type OrderCommand =
  | {
      readonly type: 'RegisterToConference';
      readonly data: CommandData['RegisterToConference'] & {
        readonly now: number;
        /** The access code of a new order (unused when the order exists). */
        readonly accessCode: string;
        readonly prices: SeatPrices;
        /** How long a new order holds its seats; default RESERVATION_WINDOW_MS. */
        readonly reservationWindowMs?: number;
      };
    }
  | {
      readonly type: 'MarkSeatsAsReserved';
      readonly data: CommandData['MarkSeatsAsReserved'] & { readonly prices: SeatPrices };
    }
  | { readonly type: 'RejectOrder'; readonly data: CommandData['RejectOrder'] }
  | { readonly type: 'AssignRegistrantDetails'; readonly data: CommandData['AssignRegistrantDetails'] }
  | { readonly type: 'ConfirmOrder'; readonly data: CommandData['ConfirmOrder'] }
  | { readonly type: 'StartOrderPayment'; readonly data: CommandData['StartOrderPayment'] }
  | { readonly type: 'CancelOrderPayment'; readonly data: CommandData['CancelOrderPayment'] };

export interface OrderState {
  /** False until OrderPlaced: the order does not exist. */
  readonly placed: boolean;
  readonly conferenceId: string;
  /** The requested seats, then (once the reservation is back) the reserved ones. */
  readonly seats: readonly SeatQuantity[];
  /** The latest OrderTotalsCalculated (no lines before the order is placed). */
  readonly totals: OrderTotals;
  readonly confirmed: boolean;
  readonly expired: boolean;
  /** The seats asked for last are reserved (in full or in part). */
  readonly reserved: boolean;
  /** The payment started and not yet settled ('' when none). */
  readonly openPaymentId: string;
}

export const orderDecider: Decider<OrderState, OrderEvent, OrderCommand> = {
  initialState: () => ({
    placed: false,
    conferenceId: '',
    seats: [],
    totals: { lines: [], totalCents: 0, isFreeOfCharge: true },
    confirmed: false,
    expired: false,
    reserved: false,
    openPaymentId: '',
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'OrderPlaced':
        return { ...state, placed: true, conferenceId: event.data.conferenceId, seats: event.data.seats };
      case 'OrderUpdated':
        return { ...state, seats: event.data.seats, reserved: false };
      case 'OrderPartiallyReserved':
      case 'OrderReservationCompleted':
        return { ...state, seats: event.data.seats, reserved: true };
      case 'OrderTotalsCalculated': {
        const { lines, totalCents, isFreeOfCharge } = event.data;
        return { ...state, totals: { lines, totalCents, isFreeOfCharge } };
      }
      case 'OrderConfirmed':
        return { ...state, confirmed: true, openPaymentId: '' };
      case 'OrderPaymentStarted':
        return { ...state, openPaymentId: event.data.paymentId };
      case 'OrderPaymentCancelled':
        return { ...state, openPaymentId: '' };
      case 'OrderExpired':
        return { ...state, expired: true };
      case 'OrderRegistrantAssigned':
        return state;
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'RegisterToConference':
        return register(command.data, state);
      case 'MarkSeatsAsReserved':
        return markAsReserved(command.data, existing(state, command.data.orderId));
      case 'RejectOrder':
        return expire(command.data.orderId, state);
      case 'AssignRegistrantDetails':
        // The registrant's e-mail finds the order: after confirmation only the owner may change it, so whoever holds
        // the order cannot lock the customer out of it.
        if (existing(state, command.data.orderId).confirmed && command.data.byOwner !== true)
          throw new InvalidOperationError(
            'The registrant of a confirmed order can only be changed by the conference owner.',
          );
        return assignRegistrant(command.data);
      case 'ConfirmOrder':
        return confirm(command.data, existing(state, command.data.orderId));
      case 'StartOrderPayment':
        return startPayment(command.data, existing(state, command.data.orderId));
      case 'CancelOrderPayment': {
        const { orderId, paymentId } = command.data;
        if (existing(state, orderId).openPaymentId !== paymentId) return [];
        return [{ type: 'OrderPaymentCancelled', data: { orderId, paymentId } }];
      }
    }
  },
};

type Data<Type extends OrderCommand['type']> = Extract<OrderCommand, { type: Type }>['data'];

/** Places a new order or replaces the seats of an existing one, and prices the seats. */
function register(data: Data<'RegisterToConference'>, state: OrderState): OrderEvent[] {
  const { orderId, conferenceId } = data;
  const seats = validSeats(data.seats);
  if (state.placed) {
    assertModifiable(state);
    if (state.openPaymentId !== '')
      throw new InvalidOperationError('A payment is in progress for this order: its seats cannot change.');
    // The prices passed in are those of `conferenceId`: pricing another conference's seats would be wrong.
    if (conferenceId !== state.conferenceId)
      throw new InvalidOperationError('The order belongs to another conference.');
  }
  const totals = totalsCalculated(orderId, seats, data.prices, conferenceId);
  if (state.placed) return [{ type: 'OrderUpdated', data: { orderId, seats } }, totals];
  const reservationAutoExpiration = data.now + (data.reservationWindowMs ?? RESERVATION_WINDOW_MS);
  return [
    {
      type: 'OrderPlaced',
      data: { orderId, conferenceId, seats, reservationAutoExpiration, accessCode: data.accessCode },
    },
    totals,
  ];
}

/**
 * Takes the seats the reservation got. Partial when any requested seat type (zero quantities aside) did not get
 * exactly its quantity: then the order is priced again on the reserved seats; a complete one keeps its totals.
 */
function markAsReserved(data: Data<'MarkSeatsAsReserved'>, state: OrderState): OrderEvent[] {
  assertModifiable(state);
  const { orderId, expiration: reservationExpiration } = data;
  const seen = new Set<string>();
  for (const { seatTypeId, quantity } of data.seats) {
    if (!Number.isInteger(quantity) || quantity < 0 || seen.has(seatTypeId))
      throw new ValidationError({ seats: 'Invalid reservation.' }, 'Invalid reservation.');
    seen.add(seatTypeId);
  }
  const reserved = copySeats(data.seats);
  const complete = state.seats.every(
    (wanted) =>
      wanted.quantity === 0 ||
      reserved.some((seat) => seat.seatTypeId === wanted.seatTypeId && seat.quantity === wanted.quantity),
  );
  if (complete)
    return [{ type: 'OrderReservationCompleted', data: { orderId, reservationExpiration, seats: reserved } }];
  return [
    { type: 'OrderPartiallyReserved', data: { orderId, reservationExpiration, seats: reserved } },
    totalsCalculated(orderId, reserved, data.prices, state.conferenceId),
  ];
}

/**
 * Nothing to do for an order that never existed, has already expired (RejectOrder may come twice) or was confirmed
 * (an expiry that raced the confirmation: the order stays sold).
 */
function expire(orderId: string, state: OrderState): OrderEvent[] {
  if (!state.placed || state.expired || state.confirmed) return [];
  return [{ type: 'OrderExpired', data: { orderId } }];
}

function confirm(data: Data<'ConfirmOrder'>, state: OrderState): OrderEvent[] {
  const { orderId } = data;
  if (state.confirmed) return [];
  if (state.expired) throw new InvalidOperationError('Cannot confirm an expired order.');
  if (!state.reserved) throw new InvalidOperationError('The seats of the order are not reserved yet.');
  if (state.totals.totalCents > 0) {
    if (data.paymentId === undefined || data.paymentId !== state.openPaymentId)
      throw new InvalidOperationError('The order is confirmed by the payment started for it.');
    if (data.amountCents !== state.totals.totalCents || (data.currency ?? CURRENCY) !== CURRENCY)
      throw new InvalidOperationError('The amount paid does not match the order total.');
  }
  return [{ type: 'OrderConfirmed', data: { orderId, seats: state.seats } }];
}

/** Opens a payment of the order's total: its seats are then fixed until the payment is settled. */
function startPayment(data: Data<'StartOrderPayment'>, state: OrderState): OrderEvent[] {
  const { orderId, paymentId } = data;
  if (state.openPaymentId === paymentId) return [];
  assertModifiable(state);
  if (!state.reserved) throw new InvalidOperationError('The seats of the order are not reserved yet.');
  if (state.totals.totalCents === 0) throw new InvalidOperationError('The order is free of charge.');
  return [{ type: 'OrderPaymentStarted', data: { orderId, paymentId, totalCents: state.totals.totalCents } }];
}

function assignRegistrant(data: Data<'AssignRegistrantDetails'>): OrderEvent[] {
  const { orderId, firstName, lastName, email } = data;
  assertValidPersonalInfo({ firstName, lastName, email });
  return [{ type: 'OrderRegistrantAssigned', data: { orderId, firstName, lastName, email } }];
}

function totalsCalculated(
  orderId: string,
  seats: readonly SeatQuantity[],
  prices: SeatPrices,
  conferenceId: string,
): OrderEvent {
  return { type: 'OrderTotalsCalculated', data: { orderId, ...priceOrder(seats, prices, conferenceId) } };
}

/** The state of an order that exists (the Journey's repository Get). */
function existing(state: OrderState, orderId: string): OrderState {
  if (!state.placed) throw new NotFoundError('Order', orderId);
  return state;
}

function assertModifiable(state: OrderState): void {
  if (state.confirmed) throw new InvalidOperationError('Cannot modify a confirmed order.');
  if (state.expired) throw new InvalidOperationError('Cannot modify an expired order.');
}

/** The requested seats, checked as RegisterToConference requires, copied with only their two fields. */
function validSeats(seats: readonly SeatQuantity[]): SeatQuantity[] {
  const invalid = (message: string) => new ValidationError({ seats: message }, message);
  const seen = new Set<string>();
  for (const { seatTypeId, quantity } of seats) {
    // A seat type twice would make "reserved exactly as requested" ambiguous.
    if (!Number.isInteger(quantity) || quantity < 0 || seen.has(seatTypeId))
      throw invalid('Invalid registration.');
    if (quantity > MAX_SEATS_PER_TYPE)
      throw invalid(`At most ${MAX_SEATS_PER_TYPE} seats of one type can be ordered.`);
    seen.add(seatTypeId);
  }
  if (!seats.some((seat) => seat.quantity > 0)) throw invalid('One or more items are required.');
  return copySeats(seats);
}

/** Events get exactly the contract's fields, whatever else the caller's objects hold. */
function copySeats(seats: readonly SeatQuantity[]): SeatQuantity[] {
  return seats.map(({ seatTypeId, quantity }) => ({ seatTypeId, quantity }));
}
