/**
 * The RegistrationProcessManager of the CQRS Journey as a Stratus process definition: it drives an order from
 * OrderPlaced through the seat reservation and the payment to the committed seats, and rejects the order and
 * releases its seats when the reservation runs out. Every message is correlated to the order id (the process id,
 * and the reservation id too), so the ProcessManager stores each process as the stream
 * `registrationProcess-<orderId>`; it also drops what the Journey's router dropped: events for a completed process
 * (a payment after expiry), repeated events, and timeouts of a process that moved on. Unlike the Journey, a
 * repeated OrderPlaced for a completed process starts nothing, since the id it maps to is taken.
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
  type OrderEvent,
  type PaymentEvent,
  RESERVATION_GRACE_MS,
  type SeatQuantity,
  type SeatsAvailabilityEvent,
} from './contracts.js';
import { InvalidOperationError } from './errors.js';

/** The Journey's states; whether the process is over is kept by the ProcessManager (`completed`). */
export type RegistrationProcessStage =
  | 'NotStarted'
  | 'AwaitingReservationConfirmation'
  | 'ReservationConfirmationReceived'
  | 'PaymentConfirmationReceived';

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
}

/** A contract event as the process receives it: with its id and metadata (the correlation id). */
type Received<Event> = Event extends DomainEvent<infer Type, infer Data> ? ProcessEvent<Type, Data> : never;

export type RegistrationProcessEvent =
  | Received<Extract<OrderEvent, { type: 'OrderPlaced' | 'OrderUpdated' | 'OrderConfirmed' }>>
  | Received<Extract<SeatsAvailabilityEvent, { type: 'SeatsReserved' }>>
  | Received<Extract<PaymentEvent, { type: 'PaymentCompleted' }>>
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
          return event.data.orderId;
        case 'SeatsReserved':
          return event.data.reservationId;
        case 'PaymentCompleted':
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
    }),
    handle(state, event, context) {
      switch (event.type) {
        case 'OrderPlaced':
          return orderPlaced(state, event.data, context, graceMs);
        case 'OrderUpdated':
          return orderUpdated(state, event.data.seats, context);
        case 'SeatsReserved':
          return seatsReserved(state, event.data.reservationDetails, event.metadata?.correlationId);
        case 'PaymentCompleted':
          return paymentCompleted(state);
        case 'OrderConfirmed':
          return orderConfirmed(state);
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
  if (state.stage !== 'NotStarted') {
    // The same OrderPlaced published again (F3, F9): it was handled when the process started.
    if (order.conferenceId === state.conferenceId) return undefined;
    throw new InvalidOperationError('The order was placed for another conference.');
  }
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
  if (state.stage !== 'AwaitingReservationConfirmation' && state.stage !== 'ReservationConfirmationReceived')
    throw new InvalidOperationError('The order cannot be updated at this stage.');
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
  if (state.stage !== 'AwaitingReservationConfirmation') {
    // A second copy of the reply already acted on (F8): the Journey saw these under load; skip it.
    if (correlationId === state.seatReservationCommandId) return undefined;
    throw new InvalidOperationError('Cannot handle seat reservation at this stage.');
  }
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

function paymentCompleted(state: RegistrationProcessState): Outcome {
  if (state.stage !== 'ReservationConfirmationReceived')
    throw new InvalidOperationError('The payment cannot be accepted at this stage.');
  return {
    state: { ...state, stage: 'PaymentConfirmationReceived' },
    send: [command('ConfirmOrder', { orderId: state.orderId })],
  };
}

/** Paid orders come from PaymentConfirmationReceived; free ones from ReservationConfirmationReceived. */
function orderConfirmed(state: RegistrationProcessState): Outcome {
  if (state.stage !== 'ReservationConfirmationReceived' && state.stage !== 'PaymentConfirmationReceived')
    throw new InvalidOperationError('The order cannot be confirmed at this stage.');
  // Completing drops the pending expiry too (the Journey cleared its ExpirationCommandId).
  return { send: [command('CommitSeatReservation', reservationOf(state))], complete: true };
}

/** Only the live timeout gets here: the manager drops one whose process completed. */
function expired(state: RegistrationProcessState): Outcome {
  return {
    send: [
      command('RejectOrder', { orderId: state.orderId }),
      command('CancelSeatReservation', reservationOf(state)),
    ],
    complete: true,
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
