/**
 * The order read models, as documents: `order` joins the Journey's DraftOrder and PricedOrder (what the registrant
 * sees, looked up by e-mail and access code), `conferenceOrder` is the owner's row of the orders list (looked up by
 * conference), `assignments` the seats to assign (the Journey's OrderSeats), and `payment` the payment processor's
 * view. Assignments ids equal order ids (one set per order), so every event names its documents directly.
 */
import type { DocumentKey, DocumentProjectionDefinition, DocumentSession } from '@stratus/eventsourcing';
import type {
  OrderEvent,
  PaymentEvent,
  PersonalInfo,
  SeatAssignmentsEvent,
  SeatQuantity,
} from '../domain/contracts.js';

export type OrderStatus = 'pending' | 'reserved' | 'partiallyReserved' | 'confirmed' | 'rejected' | 'expired';

export interface OrderLineView {
  readonly seatTypeId: string;
  readonly requested: number;
  readonly reserved: number;
  readonly unitPriceCents: number;
  readonly lineTotalCents: number;
}

export interface OrderView {
  readonly orderId: string;
  readonly conferenceId: string;
  readonly status: OrderStatus;
  readonly accessCode: string;
  readonly lines: readonly OrderLineView[];
  readonly totalCents: number;
  readonly isFreeOfCharge: boolean;
  /** Epoch ms; null once confirmed. */
  readonly reservationExpiresAt: number | null;
  readonly registrant: PersonalInfo | null;
  /** The order stream's version this view reflects (the web's "order version"). */
  readonly version: number;
}

/** The owner's row of the orders list (the Journey's management Order). */
export interface ConferenceOrderView {
  readonly orderId: string;
  readonly conferenceId: string;
  readonly accessCode: string;
  readonly status: 'pending' | 'paid';
  readonly totalCents: number;
  readonly registrant: PersonalInfo | null;
}

export interface AssignedSeatView {
  readonly position: number;
  readonly seatTypeId: string;
  readonly attendee: PersonalInfo | null;
}

export interface AssignmentsView {
  readonly orderId: string;
  readonly seats: readonly AssignedSeatView[];
}

export type PaymentStatus = 'initiated' | 'completed' | 'rejected';

export interface PaymentView {
  readonly paymentId: string;
  readonly orderId: string;
  readonly conferenceId: string;
  readonly description: string;
  readonly totalCents: number;
  readonly status: PaymentStatus;
  /** Why the payment is owed back, when it paid for nothing (absent otherwise). */
  readonly refundDue?: string;
}

export const ORDER = 'order';
export const CONFERENCE_ORDER = 'conferenceOrder';
export const ASSIGNMENTS = 'assignments';
export const PAYMENT = 'payment';

/** The lookup key of an order: e-mail compared case-insensitively, the access code exactly. */
export function orderLookup(email: string, accessCode: string): string {
  return `${email.trim().toLowerCase()}|${accessCode}`;
}

type ViewEvent = OrderEvent | SeatAssignmentsEvent | PaymentEvent;

/** Requested lines replace the old ones; a seat type that stays keeps its price until the totals come. */
function requestedLines(previous: readonly OrderLineView[], seats: readonly SeatQuantity[]): OrderLineView[] {
  return seats.map((seat) => {
    const before = previous.find((line) => line.seatTypeId === seat.seatTypeId);
    return {
      seatTypeId: seat.seatTypeId,
      requested: seat.quantity,
      reserved: 0,
      unitPriceCents: before?.unitPriceCents ?? 0,
      lineTotalCents: 0,
    };
  });
}

function reservedLines(lines: readonly OrderLineView[], seats: readonly SeatQuantity[]): OrderLineView[] {
  return lines.map((line) => ({
    ...line,
    reserved: seats.find((seat) => seat.seatTypeId === line.seatTypeId)?.quantity ?? 0,
  }));
}

function putOrder(session: DocumentSession, order: OrderView): void {
  session.put(
    ORDER,
    order.orderId,
    order,
    order.registrant === null ? undefined : orderLookup(order.registrant.email, order.accessCode),
  );
}

function putConferenceOrder(session: DocumentSession, row: ConferenceOrderView): void {
  session.put(CONFERENCE_ORDER, row.orderId, row, row.conferenceId);
}

function applyOrderEvent(session: DocumentSession, event: OrderEvent, version: number) {
  const id = event.data.orderId;
  if (event.type === 'OrderPlaced') {
    const { conferenceId, seats, reservationAutoExpiration, accessCode } = event.data;
    putOrder(session, {
      orderId: id,
      conferenceId,
      status: 'pending',
      accessCode,
      lines: requestedLines([], seats),
      totalCents: 0,
      isFreeOfCharge: false,
      reservationExpiresAt: reservationAutoExpiration,
      registrant: null,
      version,
    });
    putConferenceOrder(session, {
      orderId: id,
      conferenceId,
      accessCode,
      status: 'pending',
      totalCents: 0,
      registrant: null,
    });
    return;
  }
  const order = session.get<OrderView>(ORDER, id);
  const row = session.get<ConferenceOrderView>(CONFERENCE_ORDER, id);
  // An order's events arrive in order, OrderPlaced first.
  if (order === undefined || row === undefined) throw new Error(`order view: no order ${id}`);
  const next = (change: Partial<OrderView>) => putOrder(session, { ...order, ...change, version });
  switch (event.type) {
    case 'OrderUpdated':
      return next({ status: 'pending', lines: requestedLines(order.lines, event.data.seats) });
    case 'OrderPartiallyReserved': {
      const { seats, reservationExpiration } = event.data;
      const anything = seats.some((seat) => seat.quantity > 0);
      return next({
        status: anything ? 'partiallyReserved' : 'rejected',
        lines: reservedLines(order.lines, seats),
        reservationExpiresAt: reservationExpiration,
      });
    }
    case 'OrderReservationCompleted':
      return next({
        status: 'reserved',
        lines: reservedLines(order.lines, event.data.seats),
        reservationExpiresAt: event.data.reservationExpiration,
      });
    case 'OrderTotalsCalculated': {
      const { lines, totalCents, isFreeOfCharge } = event.data;
      putConferenceOrder(session, { ...row, totalCents });
      return next({
        totalCents,
        isFreeOfCharge,
        lines: order.lines.map((line) => {
          const priced = lines.find((candidate) => candidate.seatTypeId === line.seatTypeId);
          return priced === undefined
            ? { ...line, lineTotalCents: 0 }
            : { ...line, unitPriceCents: priced.unitPriceCents, lineTotalCents: priced.lineTotalCents };
        }),
      });
    }
    case 'OrderRegistrantAssigned': {
      const { firstName, lastName, email } = event.data;
      const registrant = { firstName, lastName, email };
      putConferenceOrder(session, { ...row, registrant });
      return next({ registrant });
    }
    case 'OrderConfirmed':
      putConferenceOrder(session, { ...row, status: 'paid' });
      return next({ status: 'confirmed', reservationExpiresAt: null });
    case 'OrderExpired':
      // The Journey deletes the owner's row of an expired order; the registrant still learns it expired.
      session.delete(CONFERENCE_ORDER, id);
      return next({ status: 'expired' });
  }
}

function applyAssignmentsEvent(session: DocumentSession, event: SeatAssignmentsEvent): void {
  const id = event.data.assignmentsId;
  if (event.type === 'SeatAssignmentsCreated') {
    const seats = event.data.seats.map((seat) => ({ ...seat, attendee: null }));
    session.put(ASSIGNMENTS, id, { orderId: event.data.orderId, seats } satisfies AssignmentsView);
    return;
  }
  const view = session.get<AssignmentsView>(ASSIGNMENTS, id);
  if (view === undefined) throw new Error(`assignments view: no assignments ${id}`);
  const attendee = event.type === 'SeatUnassigned' ? null : event.data.attendee;
  session.put(ASSIGNMENTS, id, {
    ...view,
    seats: view.seats.map((seat) => (seat.position === event.data.position ? { ...seat, attendee } : seat)),
  } satisfies AssignmentsView);
}

function applyPaymentEvent(session: DocumentSession, event: PaymentEvent): void {
  const id = event.data.paymentId;
  if (event.type === 'PaymentInitiated') {
    const { paymentSourceId, conferenceId, description, totalCents } = event.data;
    session.put(PAYMENT, id, {
      paymentId: id,
      orderId: paymentSourceId,
      conferenceId,
      description,
      totalCents,
      status: 'initiated',
    } satisfies PaymentView);
    return;
  }
  const view = session.get<PaymentView>(PAYMENT, id);
  if (view === undefined) throw new Error(`payment view: no payment ${id}`);
  if (event.type === 'PaymentRefundDue') session.put(PAYMENT, id, { ...view, refundDue: event.data.reason });
  else
    session.put(PAYMENT, id, {
      ...view,
      status: event.type === 'PaymentCompleted' ? 'completed' : 'rejected',
    });
}

const ORDER_EVENTS: readonly OrderEvent['type'][] = [
  'OrderPlaced',
  'OrderUpdated',
  'OrderPartiallyReserved',
  'OrderReservationCompleted',
  'OrderTotalsCalculated',
  'OrderRegistrantAssigned',
  'OrderConfirmed',
  'OrderExpired',
];
const ASSIGNMENT_EVENTS: readonly SeatAssignmentsEvent['type'][] = [
  'SeatAssignmentsCreated',
  'SeatAssigned',
  'SeatUnassigned',
  'SeatAssignmentUpdated',
];
const PAYMENT_EVENTS: readonly PaymentEvent['type'][] = [
  'PaymentInitiated',
  'PaymentCompleted',
  'PaymentRejected',
  'PaymentRefundDue',
];

const isPaymentEvent = (event: ViewEvent): event is PaymentEvent =>
  (PAYMENT_EVENTS as readonly string[]).includes(event.type);
const isAssignmentsEvent = (event: ViewEvent): event is SeatAssignmentsEvent =>
  (ASSIGNMENT_EVENTS as readonly string[]).includes(event.type);

export const orderView: DocumentProjectionDefinition = {
  name: 'orders',
  version: 1,
  eventTypes: [...ORDER_EVENTS, ...ASSIGNMENT_EVENTS, ...PAYMENT_EVENTS],
  documentsOf(recorded): DocumentKey[] {
    const event = recorded as unknown as ViewEvent;
    if (isPaymentEvent(event)) return [{ collection: PAYMENT, id: event.data.paymentId }];
    if (isAssignmentsEvent(event)) return [{ collection: ASSIGNMENTS, id: event.data.assignmentsId }];
    const id = event.data.orderId;
    return [
      { collection: ORDER, id },
      { collection: CONFERENCE_ORDER, id },
    ];
  },
  apply(recorded, session) {
    const event = recorded as unknown as ViewEvent;
    if (isPaymentEvent(event)) applyPaymentEvent(session, event);
    else if (isAssignmentsEvent(event)) applyAssignmentsEvent(session, event);
    else applyOrderEvent(session, event, recorded.streamVersion);
  },
};
