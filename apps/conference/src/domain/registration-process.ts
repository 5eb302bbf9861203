/**
 * The RegistrationProcessManager of the CQRS Journey as a Stratus process definition: it drives an order from
 * OrderPlaced through the seat reservation and the payment to the committed seats, and rejects the order and
 * releases its seats when the reservation runs out. Every message is correlated to the order id (the process id,
 * and the reservation id too), so the ProcessManager stores each process as the stream
 * `registrationProcess-<orderId>`; it also drops what the Journey's router dropped: events for a completed process
 * (a payment after expiry), repeated events, and timeouts of a process that moved on. Unlike the Journey, a
 * repeated OrderPlaced for a completed process starts nothing, since the id it maps to is taken.
 *
 * Beyond the Journey, no event makes a step throw (a step that throws would be retried, then parked): an event at a
 * stage where it means nothing is dropped, and a payment that cannot pay for the order (a second one, another
 * amount, one that came too late) is recorded as a refund due. Seats are released only once the order has expired
 * (OrderExpired, which a confirmed order never records), so an expiry that races a confirmation cannot release
 * sold seats; a confirmed process lives on until its expiry time, to refund late duplicate payments. A payment that
 * completed after the order could take it owes itself back (PaymentCompleted says `late`) and confirms nothing, even
 * when the process has not handled the expiry yet (its timeout still on its way).
 */
import { assertDuration } from '@stratus/core';
import type {
  CommandToSend,
  DomainEvent,
  ProcessContext,
  ProcessDefinition,
  ProcessEvent,
  ProcessOutcome,
} from '@stratus/eventsourcing';
import {
  type CommandData,
  type CommandType,
  CURRENCY,
  type OrderEvent,
  type PaymentEvent,
  RESERVATION_GRACE_MS,
  type SeatQuantity,
  type SeatsAvailabilityEvent,
} from './contracts.js';

/** The Journey's states; whether the process is over is kept by the ProcessManager (`completed`). */
export type RegistrationProcessStage =
  | 'NotStarted'
  | 'AwaitingReservationConfirmation'
  | 'ReservationConfirmationReceived'
  | 'PaymentConfirmationReceived'
  /** Seats committed; the process waits for its expiry time, refunding any other payment meanwhile. */
  | 'OrderConfirmed'
  /** The reservation ran out and RejectOrder was sent: the seats go when the order has expired. */
  | 'Expiring';

export interface RegistrationProcessState {
  readonly stage: RegistrationProcessStage;
  /** The process id, which is also the seat reservation's id. */
  readonly orderId: string;
  /** '' until the order is placed. */
  readonly conferenceId: string;
  /** Epoch ms when the order's reservation ends; 0 until the order is placed. */
  readonly reservationAutoExpiration: number;
  /** The MakeSeatReservation whose SeatsReserved is awaited: replies to older ones are stale. */
  readonly seatReservationCommandId: string;
  /** The payment the order started, and its total ('' and 0 when none; absent in processes stored before). */
  readonly paymentId?: string;
  readonly paymentTotalCents?: number;
  /** The payment that paid for the order ('' until one did). */
  readonly paidPaymentId?: string;
  /** The expiry time passed while the order's confirmation was on its way. */
  readonly expiryPassed?: boolean;
}

/** A contract event as the process receives it: with its id and metadata (the correlation id). */
type Received<Event> = Event extends DomainEvent<infer Type, infer Data> ? ProcessEvent<Type, Data> : never;

export type RegistrationProcessEvent =
  | Received<
      Extract<
        OrderEvent,
        { type: 'OrderPlaced' | 'OrderUpdated' | 'OrderConfirmed' | 'OrderExpired' | 'OrderPaymentStarted' }
      >
    >
  | Received<Extract<SeatsAvailabilityEvent, { type: 'SeatsReserved' }>>
  | Received<Extract<PaymentEvent, { type: 'PaymentCompleted' | 'PaymentRejected' }>>
  // The process's own timeout: the reservation and its grace period are over.
  | ProcessEvent<'ExpireRegistrationProcess', { readonly orderId: string }>;

export interface RegistrationProcessOptions {
  /**
   * How long after the reservation expires the seats are still held, so that a payment under way can complete the
   * order; default RESERVATION_GRACE_MS (the Journey's 14 minutes).
   */
  readonly graceMs?: number;
}

/** How long past the reservation's end the first MakeSeatReservation may still run (the Journey's TTL). */
const RESERVATION_COMMAND_SLACK_MS = 60_000;

/** The key of the MakeSeatReservation command id, derived anew (and so different) for every event that sends one. */
const SEAT_RESERVATION = 'MakeSeatReservation';

export function registrationProcessDefinition(
  options: RegistrationProcessOptions = {},
): ProcessDefinition<RegistrationProcessState, RegistrationProcessEvent> {
  const { graceMs = RESERVATION_GRACE_MS } = options;
  assertDuration('graceMs', graceMs);
  return {
    name: 'registrationProcess',
    startedBy: ['OrderPlaced'],
    correlate(event) {
      switch (event.type) {
        case 'OrderPlaced':
        case 'OrderUpdated':
        case 'OrderConfirmed':
        case 'OrderExpired':
        case 'OrderPaymentStarted':
          return event.data.orderId;
        case 'SeatsReserved':
          return event.data.reservationId;
        case 'PaymentCompleted':
        case 'PaymentRejected':
          return event.data.paymentSourceId;
        default:
          // The timeout comes back through the manager's deliverTimeout, never as a routed event; other
          // events of the store concern no registration.
          return undefined;
      }
    },
    initialState: (orderId) => ({
      stage: 'NotStarted',
      orderId,
      conferenceId: '',
      reservationAutoExpiration: 0,
      seatReservationCommandId: '',
      paymentId: '',
      paymentTotalCents: 0,
      paidPaymentId: '',
      expiryPassed: false,
    }),
    handle(state, event, context) {
      switch (event.type) {
        case 'OrderPlaced':
          return orderPlaced(state, event.data, context, graceMs);
        case 'OrderUpdated':
          return orderUpdated(state, event.data.seats, context);
        case 'SeatsReserved':
          return seatsReserved(state, event.data.reservationDetails, event.metadata?.correlationId);
        case 'OrderPaymentStarted':
          return paymentStarted(state, event.data);
        case 'PaymentCompleted':
          return paymentCompleted(state, event.data);
        case 'PaymentRejected':
          return paymentRejected(state, event.data.paymentId);
        case 'OrderConfirmed':
          return orderConfirmed(state);
        case 'OrderExpired':
          return orderExpired(state);
        case 'ExpireRegistrationProcess':
          return expired(state);
      }
    },
  };
}

/** The process with the Journey's 14-minute grace period. */
export const registrationProcess = registrationProcessDefinition();

type Outcome = ProcessOutcome<RegistrationProcessState, RegistrationProcessEvent> | undefined;
type OrderPlacedData = Extract<RegistrationProcessEvent, { type: 'OrderPlaced' }>['data'];

function orderPlaced(
  state: RegistrationProcessState,
  order: OrderPlacedData,
  context: ProcessContext,
  graceMs: number,
): Outcome {
  // The same OrderPlaced published again (F3, F9): it was handled when the process started.
  if (state.stage !== 'NotStarted') return undefined;
  const { conferenceId, seats, reservationAutoExpiration } = order;
  const placed: RegistrationProcessState = { ...state, conferenceId, reservationAutoExpiration };
  if (reservationAutoExpiration <= context.now) {
    return { state: placed, send: [command('RejectOrder', { orderId: state.orderId })], complete: true };
  }
  const seatReservationCommandId = context.id(SEAT_RESERVATION);
  return {
    state: { ...placed, stage: 'AwaitingReservationConfirmation', seatReservationCommandId },
    // Undelivered by a minute past the reservation's end, it is dropped (F12): the order has expired by then.
    send: [
      {
        ...makeSeatReservation(placed, seats, seatReservationCommandId),
        expiresAt: reservationAutoExpiration + RESERVATION_COMMAND_SLACK_MS,
      },
    ],
    schedule: [
      {
        event: { type: 'ExpireRegistrationProcess', data: { orderId: state.orderId } },
        at: reservationAutoExpiration + graceMs,
      },
    ],
  };
}

function orderUpdated(
  state: RegistrationProcessState,
  seats: readonly SeatQuantity[],
  context: ProcessContext,
): Outcome {
  // The order refuses seat changes once paid for or over: one arriving later has nothing left to change.
  if (state.stage !== 'AwaitingReservationConfirmation' && state.stage !== 'ReservationConfirmationReceived')
    return undefined;
  // A new command id: the reply to the earlier reservation, if still on its way, is then recognised as stale.
  const seatReservationCommandId = context.id(SEAT_RESERVATION);
  return {
    state: { ...state, stage: 'AwaitingReservationConfirmation', seatReservationCommandId },
    send: [makeSeatReservation(state, seats, seatReservationCommandId)],
  };
}

/** `correlationId` is the id of the MakeSeatReservation the seats-availability handler answered. */
function seatsReserved(
  state: RegistrationProcessState,
  reservationDetails: readonly SeatQuantity[],
  correlationId: string | undefined,
): Outcome {
  // A second copy of the reply already acted on (F8, the Journey saw these under load), or one for a reservation
  // the process has moved past: skip it.
  if (state.stage !== 'AwaitingReservationConfirmation') return undefined;
  // The reply to a reservation an OrderUpdated replaced, arriving out of order (F7): wait for the latest one.
  if (correlationId !== undefined && correlationId !== state.seatReservationCommandId) return undefined;
  return {
    state: { ...state, stage: 'ReservationConfirmationReceived' },
    send: [
      command('MarkSeatsAsReserved', {
        orderId: state.orderId,
        seats: reservationDetails,
        expiration: state.reservationAutoExpiration,
      }),
    ],
  };
}

function paymentStarted(
  state: RegistrationProcessState,
  payment: { readonly paymentId: string; readonly totalCents: number },
): Outcome {
  if (state.stage === 'OrderConfirmed' || state.stage === 'Expiring' || state.paymentId === payment.paymentId)
    return undefined;
  return { state: { ...state, paymentId: payment.paymentId, paymentTotalCents: payment.totalCents } };
}

type PaymentCompletedData = Extract<RegistrationProcessEvent, { type: 'PaymentCompleted' }>['data'];

/** Confirms the order paid by its payment for its total; any other completed payment is owed back. */
function paymentCompleted(state: RegistrationProcessState, payment: PaymentCompletedData): Outcome {
  const { paymentId, amountCents = state.paymentTotalCents, currency = CURRENCY } = payment;
  if (paymentId === state.paidPaymentId) return undefined; // the same payment again
  // It came after the order could take it, and owes itself back: whether or not the expiry has come by here yet.
  if (payment.late === true) return undefined;
  const refusal = state.paidPaymentId
    ? 'The order was already paid.'
    : state.stage !== 'ReservationConfirmationReceived'
      ? 'The order could not be paid at this stage.'
      : paymentId !== state.paymentId
        ? 'The payment is not the one started for the order.'
        : amountCents !== state.paymentTotalCents || currency !== CURRENCY
          ? 'The amount paid does not match the order total.'
          : undefined;
  if (refusal !== undefined)
    return { send: [command('RefundThirdPartyProcessorPayment', { paymentId, reason: refusal })] };
  return {
    state: { ...state, stage: 'PaymentConfirmationReceived', paidPaymentId: paymentId },
    send: [command('ConfirmOrder', { orderId: state.orderId, paymentId, amountCents, currency })],
  };
}

/** The order's payment was refused: its seats may change again, and it may be paid anew. */
function paymentRejected(state: RegistrationProcessState, paymentId: string): Outcome {
  if (paymentId !== state.paymentId || state.paidPaymentId) return undefined;
  return {
    state: { ...state, paymentId: '', paymentTotalCents: 0 },
    send: [command('CancelOrderPayment', { orderId: state.orderId, paymentId })],
  };
}

/**
 * Commits the seats of a confirmed order (paid, or free). The process then waits for its expiry time, unless that
 * has passed already.
 */
function orderConfirmed(state: RegistrationProcessState): Outcome {
  if (state.stage === 'NotStarted' || state.stage === 'OrderConfirmed') return undefined;
  const commit = command('CommitSeatReservation', reservationOf(state));
  if (state.stage === 'Expiring' || state.expiryPassed) return { send: [commit], complete: true };
  return { state: { ...state, stage: 'OrderConfirmed' }, send: [commit] };
}

/** The order expired: its seats go back, and the process is over. */
function orderExpired(state: RegistrationProcessState): Outcome {
  if (state.stage === 'NotStarted' || state.stage === 'OrderConfirmed') return undefined;
  return { send: [command('CancelSeatReservation', reservationOf(state))], complete: true };
}

/**
 * Only the live timeout gets here: the manager drops one whose process completed. A confirmed order's process is
 * over; one whose payment was accepted waits for the confirmation on its way; any other order is rejected (its
 * seats go once it has expired).
 */
function expired(state: RegistrationProcessState): Outcome {
  if (state.stage === 'OrderConfirmed') return { complete: true };
  if (state.stage === 'PaymentConfirmationReceived') return { state: { ...state, expiryPassed: true } };
  if (state.stage === 'Expiring') return undefined;
  return {
    state: { ...state, stage: 'Expiring' },
    send: [command('RejectOrder', { orderId: state.orderId })],
  };
}

function makeSeatReservation(
  state: RegistrationProcessState,
  seats: readonly SeatQuantity[],
  id: string,
): CommandToSend {
  return { ...command('MakeSeatReservation', { ...reservationOf(state), seats }), id };
}

/** The reservation is the order's: its id is the order id. */
function reservationOf(state: RegistrationProcessState) {
  return { conferenceId: state.conferenceId, reservationId: state.orderId };
}

function command<Type extends CommandType>(type: Type, data: CommandData[Type]): CommandToSend {
  return { type, data };
}
