/**
 * The messages of the Conference Management System: every event and command that crosses an aggregate, the process
 * manager, a read model or the web, with the names of the CQRS Journey so a reader can trace them. Ids are strings
 * (UUIDv7 unless said otherwise), times are epoch milliseconds, and money is integer cents (the Journey's
 * decimal(18,2)), so totals add up exactly.
 */
import type { DomainEvent } from '@stratus/eventsourcing';

/** n seats of one seat type. */
export interface SeatQuantity {
  readonly seatTypeId: string;
  readonly quantity: number;
}

export interface PersonalInfo {
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
}

/** A priced line of an order: a seat type at its price when the order was priced. */
export interface SeatOrderLine {
  readonly seatTypeId: string;
  readonly quantity: number;
  readonly unitPriceCents: number;
  readonly lineTotalCents: number;
}

export interface Owner {
  readonly name: string;
  readonly email: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Conference management (stream `conference-<conferenceId>`)

export interface ConferenceDetails {
  readonly name: string;
  readonly description: string;
  readonly location: string;
  readonly tagline: string;
  readonly twitterSearch: string;
  /** ISO dates (yyyy-mm-dd). */
  readonly startDate: string;
  readonly endDate: string;
}

export type ConferenceEvent =
  | DomainEvent<
      'ConferenceCreated',
      ConferenceDetails & {
        readonly conferenceId: string;
        readonly slug: string;
        readonly owner: Owner;
        /** The owner's 6-character access code. */
        readonly accessCode: string;
      }
    >
  | DomainEvent<'ConferenceUpdated', ConferenceDetails & { readonly conferenceId: string }>
  | DomainEvent<'ConferencePublished', { readonly conferenceId: string }>
  | DomainEvent<'ConferenceUnpublished', { readonly conferenceId: string }>
  /** The owner replaced the access code: the old one no longer opens the conference. */
  | DomainEvent<'AccessCodeRotated', { readonly conferenceId: string; readonly accessCode: string }>
  | DomainEvent<
      'SeatCreated',
      {
        readonly conferenceId: string;
        readonly seatTypeId: string;
        readonly name: string;
        readonly description: string;
        readonly priceCents: number;
        readonly quantity: number;
      }
    >
  | DomainEvent<
      'SeatUpdated',
      {
        readonly conferenceId: string;
        readonly seatTypeId: string;
        readonly name: string;
        readonly description: string;
        readonly priceCents: number;
        readonly quantity: number;
        /** The quota before this change: availability moves by quantity − previousQuantity. */
        readonly previousQuantity: number;
      }
    >
  | DomainEvent<
      'SeatDeleted',
      { readonly conferenceId: string; readonly seatTypeId: string; readonly quantity: number }
    >;

// ---------------------------------------------------------------------------------------------------------------
// Orders (stream `order-<orderId>`)

export type OrderEvent =
  | DomainEvent<
      'OrderPlaced',
      {
        readonly orderId: string;
        readonly conferenceId: string;
        readonly seats: readonly SeatQuantity[];
        readonly reservationAutoExpiration: number;
        readonly accessCode: string;
      }
    >
  | DomainEvent<'OrderUpdated', { readonly orderId: string; readonly seats: readonly SeatQuantity[] }>
  | DomainEvent<
      'OrderPartiallyReserved',
      {
        readonly orderId: string;
        readonly reservationExpiration: number;
        readonly seats: readonly SeatQuantity[];
      }
    >
  | DomainEvent<
      'OrderReservationCompleted',
      {
        readonly orderId: string;
        readonly reservationExpiration: number;
        readonly seats: readonly SeatQuantity[];
      }
    >
  | DomainEvent<
      'OrderTotalsCalculated',
      {
        readonly orderId: string;
        readonly lines: readonly SeatOrderLine[];
        readonly totalCents: number;
        readonly isFreeOfCharge: boolean;
      }
    >
  | DomainEvent<'OrderRegistrantAssigned', PersonalInfo & { readonly orderId: string }>
  | DomainEvent<
      'OrderConfirmed',
      {
        readonly orderId: string;
        /** The seats confirmed, so reactions need not load the order (absent from events recorded before). */
        readonly seats?: readonly SeatQuantity[];
      }
    >
  | DomainEvent<'OrderExpired', { readonly orderId: string }>
  /** A payment was started for the order at this total: its seats cannot change until it is settled. */
  | DomainEvent<
      'OrderPaymentStarted',
      { readonly orderId: string; readonly paymentId: string; readonly totalCents: number }
    >
  /** The payment was rejected: the order's seats may change again. */
  | DomainEvent<'OrderPaymentCancelled', { readonly orderId: string; readonly paymentId: string }>;

// ---------------------------------------------------------------------------------------------------------------
// Seats availability (stream `seatsAvailability-<conferenceId>`: one per conference, the contended aggregate)

export type SeatsAvailabilityEvent =
  | DomainEvent<
      'AvailableSeatsChanged',
      { readonly conferenceId: string; readonly seats: readonly SeatQuantity[] }
    >
  | DomainEvent<
      'SeatsReserved',
      {
        readonly conferenceId: string;
        readonly reservationId: string;
        /** What the reservation now holds (types with a non-zero quantity). */
        readonly reservationDetails: readonly SeatQuantity[];
        /** The change to the remaining seats of each type (non-zero deltas; negative when taken). */
        readonly availableSeatsChanged: readonly SeatQuantity[];
      }
    >
  | DomainEvent<
      'SeatsReservationCommitted',
      { readonly conferenceId: string; readonly reservationId: string }
    >
  | DomainEvent<
      'SeatsReservationCancelled',
      {
        readonly conferenceId: string;
        readonly reservationId: string;
        readonly availableSeatsChanged: readonly SeatQuantity[];
      }
    >;

// ---------------------------------------------------------------------------------------------------------------
// Seat assignments (stream `seatAssignments-<assignmentsId>`)

export type SeatAssignmentsEvent =
  | DomainEvent<
      'SeatAssignmentsCreated',
      {
        readonly assignmentsId: string;
        readonly orderId: string;
        readonly seats: readonly { readonly position: number; readonly seatTypeId: string }[];
      }
    >
  | DomainEvent<
      'SeatAssigned',
      {
        readonly assignmentsId: string;
        readonly position: number;
        readonly seatTypeId: string;
        readonly attendee: PersonalInfo;
      }
    >
  | DomainEvent<'SeatUnassigned', { readonly assignmentsId: string; readonly position: number }>
  | DomainEvent<
      'SeatAssignmentUpdated',
      { readonly assignmentsId: string; readonly position: number; readonly attendee: PersonalInfo }
    >;

// ---------------------------------------------------------------------------------------------------------------
// Payments (stream `payment-<paymentId>`)

/** What a payment is for: asked for by InitiateThirdPartyProcessorPayment, recorded by PaymentInitiated. */
export interface PaymentRequest {
  readonly paymentId: string;
  /** The order paid for. */
  readonly paymentSourceId: string;
  readonly conferenceId: string;
  readonly description: string;
  readonly totalCents: number;
  /** ISO 4217; CURRENCY when absent (payments recorded before it was kept). */
  readonly currency?: string;
  /**
   * Epoch ms after which the order can no longer take the payment (its reservation and grace period are over): a
   * payment completed later is owed back at once. Absent: no limit.
   */
  readonly expiresAt?: number;
}

/** What the processor says was taken (absent in payments recorded before it was kept: the total asked). */
export interface AmountPaid {
  readonly amountCents?: number;
  readonly currency?: string;
}

export type PaymentEvent =
  | DomainEvent<'PaymentInitiated', PaymentRequest>
  | DomainEvent<
      'PaymentCompleted',
      {
        readonly paymentId: string;
        readonly paymentSourceId: string;
        /**
         * Completed after the order could take it (`PaymentRequest.expiresAt`): it pays for nothing, and the
         * PaymentRefundDue recorded with it owes it back (absent: in time, or no limit).
         */
        readonly late?: true;
      } & AmountPaid
    >
  | DomainEvent<'PaymentRejected', { readonly paymentId: string; readonly paymentSourceId: string }>
  /** A completed payment that paid for nothing (a second payment, a wrong amount, a lapsed order): owed back. */
  | DomainEvent<
      'PaymentRefundDue',
      {
        readonly paymentId: string;
        readonly paymentSourceId: string;
        readonly amountCents: number;
        readonly currency: string;
        readonly reason: string;
      }
    >;

export type RegistrationEvent =
  | ConferenceEvent
  | OrderEvent
  | SeatsAvailabilityEvent
  | SeatAssignmentsEvent
  | PaymentEvent;

// ---------------------------------------------------------------------------------------------------------------
// Commands (the envelope's id is the command id; handlers pass it on as the correlation id of what they append)

export interface CommandData {
  readonly RegisterToConference: {
    readonly orderId: string;
    readonly conferenceId: string;
    readonly seats: readonly SeatQuantity[];
  };
  readonly MarkSeatsAsReserved: {
    readonly orderId: string;
    readonly seats: readonly SeatQuantity[];
    readonly expiration: number;
  };
  readonly RejectOrder: { readonly orderId: string };
  readonly AssignRegistrantDetails: PersonalInfo & {
    readonly orderId: string;
    /** The conference's owner asks: only the owner can change the registrant of a confirmed order. */
    readonly byOwner?: boolean;
  };
  /** A paid order names the payment and what it paid, checked against the order's total. */
  readonly ConfirmOrder: { readonly orderId: string; readonly paymentId?: string } & AmountPaid;
  readonly StartOrderPayment: { readonly orderId: string; readonly paymentId: string };
  readonly CancelOrderPayment: { readonly orderId: string; readonly paymentId: string };
  readonly MakeSeatReservation: {
    readonly conferenceId: string;
    readonly reservationId: string;
    readonly seats: readonly SeatQuantity[];
  };
  readonly CancelSeatReservation: { readonly conferenceId: string; readonly reservationId: string };
  readonly CommitSeatReservation: { readonly conferenceId: string; readonly reservationId: string };
  readonly AddSeats: {
    readonly conferenceId: string;
    readonly seatTypeId: string;
    readonly quantity: number;
  };
  readonly RemoveSeats: {
    readonly conferenceId: string;
    readonly seatTypeId: string;
    readonly quantity: number;
  };
  readonly AssignSeat: {
    readonly assignmentsId: string;
    readonly position: number;
    readonly attendee: PersonalInfo;
  };
  readonly UnassignSeat: { readonly assignmentsId: string; readonly position: number };
  readonly InitiateThirdPartyProcessorPayment: PaymentRequest;
  /** From the processor's verified callback: what it took. */
  readonly CompleteThirdPartyProcessorPayment: { readonly paymentId: string } & AmountPaid;
  readonly RefundThirdPartyProcessorPayment: { readonly paymentId: string; readonly reason: string };
  readonly CancelThirdPartyProcessorPayment: { readonly paymentId: string };
}

export type CommandType = keyof CommandData;

/** The commands of the seat-availability aggregate run in the session of their conference (a single writer). */
export const SEATS_AVAILABILITY_COMMANDS: readonly CommandType[] = [
  'MakeSeatReservation',
  'CancelSeatReservation',
  'CommitSeatReservation',
  'AddSeats',
  'RemoveSeats',
];

// ---------------------------------------------------------------------------------------------------------------
// Constants of the Journey

/** How long an order holds its seats. */
export const RESERVATION_WINDOW_MS = 15 * 60_000;
/** How long after the reservation expires the process manager waits (for late payments) before releasing seats. */
export const RESERVATION_GRACE_MS = 14 * 60_000;
/** The currency of every price and payment. */
export const CURRENCY = 'USD';
/** The most seats of one type a single order may ask for. */
export const MAX_SEATS_PER_TYPE = 20;
