/**
 * What the Conference's event store in PostgreSQL says became of every order, payment and seat, read straight from
 * its tables (not through the app's read models, so that a read-model bug cannot hide a lost or doubled order): for
 * the chaos test, which compares it with what the load generator was told and with what the app's API answers.
 */
import type pg from 'pg';

export interface SeatCount {
  readonly seatTypeId: string;
  readonly quantity: number;
}

/** An order's stream `order-<id>`: how many times each decisive event was recorded, and when it ended. */
export interface OrderFate {
  readonly orderId: string;
  readonly conferenceId: string;
  placed: number;
  confirmed: number;
  expired: number;
  /**
   * What its last reservation held (OrderReservationCompleted or OrderPartiallyReserved; empty: none could be),
   * undefined while it never heard back from the seats.
   */
  reserved?: readonly SeatCount[];
  /** The seats OrderConfirmed names. */
  confirmedSeats: readonly SeatCount[];
  /** Epoch ms of its first OrderConfirmed or OrderExpired. */
  settledAt?: number;
}

/** A payment's stream `payment-<id>`. */
export interface PaymentFate {
  readonly paymentId: string;
  readonly orderId: string;
  completed: number;
  /** PaymentRefundDue: the money taken is owed back. */
  refundsDue: number;
}

/** A conference's stream `seatsAvailability-<id>`, folded independently of the app's own decider. */
export interface SeatLedger {
  /** The quota: the seats every AvailableSeatsChanged added, by seat type. */
  readonly quota: Map<string, number>;
  /** Seats left, by seat type, and the fewest ever left (negative would mean oversold). */
  readonly remaining: Map<string, number>;
  readonly fewestRemaining: Map<string, number>;
  /** Reservations still held (neither committed nor cancelled), by reservation (= order) id. */
  readonly pending: Map<string, readonly SeatCount[]>;
  /** Seats sold (committed reservations), by seat type, and the committed reservations. */
  readonly sold: Map<string, number>;
  readonly committed: Set<string>;
  /** Events that make no sense here (a commit or cancellation of a reservation not held), described. */
  readonly anomalies: string[];
}

export interface Ledger {
  readonly orders: Map<string, OrderFate>;
  readonly payments: Map<string, PaymentFate>;
  /** By conference id. */
  readonly seats: Map<string, SeatLedger>;
  /** Events parked by a subscription or view (each an order or a view waiting for an operator). */
  readonly parked: number;
}

interface EventRow {
  readonly stream_name: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly recorded_at: number;
}

const add = (counts: Map<string, number>, seats: readonly SeatCount[], sign = 1) => {
  for (const { seatTypeId, quantity } of seats)
    counts.set(seatTypeId, (counts.get(seatTypeId) ?? 0) + sign * quantity);
};

function seatLedger(): SeatLedger {
  return {
    quota: new Map(),
    remaining: new Map(),
    fewestRemaining: new Map(),
    pending: new Map(),
    sold: new Map(),
    committed: new Set(),
    anomalies: [],
  };
}

function applySeats(ledger: SeatLedger, type: string, data: Record<string, unknown>): void {
  const reservationId = data.reservationId as string;
  const changed = (data.availableSeatsChanged ?? data.seats ?? []) as SeatCount[];
  switch (type) {
    case 'AvailableSeatsChanged':
      add(ledger.quota, changed);
      break;
    case 'SeatsReserved': {
      const held = data.reservationDetails as SeatCount[];
      if (ledger.committed.has(reservationId))
        ledger.anomalies.push(`${reservationId} reserved after its commit`);
      if (held.length === 0) ledger.pending.delete(reservationId);
      else ledger.pending.set(reservationId, held);
      break;
    }
    case 'SeatsReservationCommitted': {
      const held = ledger.pending.get(reservationId);
      if (held === undefined) ledger.anomalies.push(`${reservationId} committed but not held`);
      add(ledger.sold, held ?? []);
      ledger.committed.add(reservationId);
      ledger.pending.delete(reservationId);
      return;
    }
    case 'SeatsReservationCancelled':
      if (!ledger.pending.has(reservationId))
        ledger.anomalies.push(`${reservationId} cancelled but not held`);
      ledger.pending.delete(reservationId);
      break;
    default:
      return;
  }
  add(ledger.remaining, changed);
  for (const [seatTypeId, left] of ledger.remaining)
    ledger.fewestRemaining.set(seatTypeId, Math.min(left, ledger.fewestRemaining.get(seatTypeId) ?? left));
}

function applyOrder(orders: Map<string, OrderFate>, row: EventRow): void {
  const orderId = row.data.orderId as string;
  let fate = orders.get(orderId);
  if (fate === undefined) {
    fate = {
      orderId,
      conferenceId: String(row.data.conferenceId ?? ''),
      placed: 0,
      confirmed: 0,
      expired: 0,
      confirmedSeats: [],
    };
    orders.set(orderId, fate);
  }
  switch (row.type) {
    case 'OrderPlaced':
      fate.placed++;
      break;
    case 'OrderPartiallyReserved':
    case 'OrderReservationCompleted':
      fate.reserved = (row.data.seats as SeatCount[]).filter((seat) => seat.quantity > 0);
      break;
    case 'OrderConfirmed':
      fate.confirmed++;
      fate.confirmedSeats = (row.data.seats as SeatCount[] | undefined) ?? [];
      fate.settledAt ??= row.recorded_at;
      break;
    case 'OrderExpired':
      fate.expired++;
      fate.settledAt ??= row.recorded_at;
      break;
  }
}

function applyPayment(payments: Map<string, PaymentFate>, row: EventRow): void {
  const paymentId = row.data.paymentId as string;
  let fate = payments.get(paymentId);
  if (fate === undefined) {
    fate = { paymentId, orderId: String(row.data.paymentSourceId), completed: 0, refundsDue: 0 };
    payments.set(paymentId, fate);
  }
  if (row.type === 'PaymentCompleted') fate.completed++;
  if (row.type === 'PaymentRefundDue') fate.refundsDue++;
}

const quoted = (schema: string) => `"${schema.replaceAll('"', '""')}"`;

/** Every order, payment and seat event of the schema, folded. */
export async function readLedger(db: pg.Pool, schema: string): Promise<Ledger> {
  const S = quoted(schema);
  const { rows } = await db.query<EventRow>(
    `SELECT stream_name, type, data, recorded_at FROM ${S}.es_events
     WHERE stream_name LIKE 'order-%' OR stream_name LIKE 'payment-%' OR stream_name LIKE 'seatsAvailability-%'
     ORDER BY position`,
  );
  const ledger: Ledger = {
    orders: new Map(),
    payments: new Map(),
    seats: new Map(),
    parked: (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.es_parked`)).rows[0]?.n ?? 0,
  };
  for (const row of rows) {
    const category = row.stream_name.slice(0, row.stream_name.indexOf('-'));
    if (category === 'order') applyOrder(ledger.orders, row);
    else if (category === 'payment') applyPayment(ledger.payments, row);
    else {
      const conferenceId = row.stream_name.slice(category.length + 1);
      const seats = ledger.seats.get(conferenceId) ?? seatLedger();
      ledger.seats.set(conferenceId, seats);
      applySeats(seats, row.type, row.data);
    }
  }
  return ledger;
}

/** Orders placed and orders ended (confirmed or expired) so far: a cheap poll while waiting for them to settle. */
export async function settledCount(db: pg.Pool, schema: string): Promise<{ placed: number; ended: number }> {
  const { rows } = await db.query<{ placed: number; ended: number }>(
    `SELECT count(*) FILTER (WHERE type = 'OrderPlaced')::int AS placed,
            count(*) FILTER (WHERE type IN ('OrderConfirmed', 'OrderExpired'))::int AS ended
     FROM ${quoted(schema)}.es_events WHERE type IN ('OrderPlaced', 'OrderConfirmed', 'OrderExpired')`,
  );
  return rows[0] ?? { placed: 0, ended: 0 };
}

/** The pid in the candidate id (`<host>-<pid>-<random>`) of the worker leading the subscriptions, if one does. */
export async function leadingWorkerPid(db: pg.Pool, schema: string): Promise<number | undefined> {
  const { rows } = await db.query<{ owner: string }>(
    `SELECT owner FROM ${quoted(schema)}.coord_lease_holders
     WHERE name = 'conference-subscriptions' AND expires_at > $1 ORDER BY expires_at DESC LIMIT 1`,
    [Date.now()],
  );
  const pid = /-(\d+)-[0-9a-f]+$/.exec(rows[0]?.owner ?? '')?.[1];
  return pid === undefined ? undefined : Number(pid);
}

/** Where each view runner stands against the event store's head, and who owns it: "head 123; orders@1 120 (owner)". */
export async function viewProgress(db: pg.Pool, schema: string): Promise<string> {
  const head = await db.query<{ head: string | null }>(
    `SELECT max(position) AS head FROM "${schema}".es_events`,
  );
  const views = await db.query<{
    name: string;
    version: number;
    status: string;
    position: string;
    owner: string | null;
  }>(`SELECT name, version, status, position, owner FROM "${schema}".es_views ORDER BY name`);
  const each = views.rows.map(
    (v) => `${v.name}@${v.version} ${v.status} ${v.position} (${v.owner ?? 'no owner'})`,
  );
  return `head ${head.rows[0]?.head ?? 0}; ${each.join(', ')}`;
}
