import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type DocumentProjectionDefinition,
  documentTable,
  type RecordedEvent,
  sqliteDocumentProjection,
} from '@stratus/eventsourcing';
import { openSqlite, type SqliteDatabase } from '@stratus/sql';
import type { RegistrationEvent } from '../domain/contracts.js';
import { conferenceDetails } from '../domain/fixtures/conference-details.js';
import {
  CONFERENCE,
  CONFERENCE_SLUG,
  type ConferenceView,
  conferenceView,
  OWNER_LOGIN,
  ownerLoginId,
  PUBLISHED_CONFERENCE,
  type PublishedConferenceView,
} from './conference-view.js';
import {
  ASSIGNMENTS,
  type AssignmentsView,
  CONFERENCE_ORDER,
  type ConferenceOrderView,
  ORDER,
  type OrderView,
  orderLookup,
  orderView,
  PAYMENT,
  type PaymentView,
} from './order-view.js';

/** A view in a fresh in-memory SQLite database, fed events through the real document projection. */
function harness(definition: DocumentProjectionDefinition) {
  const db: SqliteDatabase = openSqlite(':memory:');
  const projection = sqliteDocumentProjection(definition);
  projection.setup(db, 1);
  const versions = new Map<string, number>();
  let position = 0;
  const table = documentTable(definition.name, 1);
  return {
    /** Applies the events as one batch, each recorded on `stream` (default: derived from the event). */
    given(stream: string, ...events: RegistrationEvent[]) {
      const recorded: RecordedEvent[] = events.map((event) => {
        const version = (versions.get(stream) ?? 0) + 1;
        versions.set(stream, version);
        return {
          id: `e-${++position}`,
          type: event.type,
          data: event.data,
          metadata: {},
          schemaVersion: 1,
          streamName: stream,
          streamVersion: version,
          globalPosition: position,
          recordedAt: position,
        };
      });
      projection.applyBatch?.(db, recorded, 1);
    },
    get<T>(collection: string, id: string): T | undefined {
      const row = db.prepare(`SELECT doc FROM ${table} WHERE collection = ? AND id = ?`).get(collection, id);
      return row === undefined ? undefined : (JSON.parse(row.doc as string) as T);
    },
    find<T>(collection: string, lookup: string): T[] {
      return db
        .prepare(`SELECT doc FROM ${table} WHERE collection = ? AND lookup = ? ORDER BY id`)
        .all(collection, lookup)
        .map((row) => JSON.parse(row.doc as string) as T);
    },
  };
}

const created: RegistrationEvent = {
  type: 'ConferenceCreated',
  data: {
    conferenceId: 'c1',
    slug: 'cqrs27',
    owner: { name: 'Ann', email: 'Ann@Example.com' },
    accessCode: 'ABC123',
    ...conferenceDetails,
  },
};
const seat = (seatTypeId: string, quantity: number) => ({ seatTypeId, quantity });

describe('conference view', () => {
  test('creates the conference unpublished, findable by slug and by the owner login', () => {
    const view = harness(conferenceView);
    view.given('conference-c1', created);
    const conference = view.get<ConferenceView>(CONFERENCE, 'c1');
    assert.equal(conference?.slug, 'cqrs27');
    assert.equal(conference?.isPublished, false);
    assert.deepEqual(view.find<ConferenceView>(CONFERENCE, 'cqrs27').length, 1);
    assert.deepEqual(view.get(CONFERENCE_SLUG, 'cqrs27'), { conferenceId: 'c1' });
    assert.deepEqual(view.find(OWNER_LOGIN, ownerLoginId('ann@example.COM', 'ABC123')), [
      { conferenceId: 'c1' },
    ]);
  });

  test('a rotated access code replaces the old one: the owner login finds the conference by the new one only', () => {
    const view = harness(conferenceView);
    view.given('conference-c1', created, {
      type: 'AccessCodeRotated',
      data: { conferenceId: 'c1', accessCode: 'XYZ789' },
    });
    assert.equal(view.get<ConferenceView>(CONFERENCE, 'c1')?.accessCode, 'XYZ789');
    assert.deepEqual(view.find(OWNER_LOGIN, ownerLoginId('ann@example.com', 'ABC123')), []);
    assert.deepEqual(view.find(OWNER_LOGIN, ownerLoginId('ann@example.com', 'XYZ789')), [
      { conferenceId: 'c1' },
    ]);
  });

  test('updates details and toggles publishing; wasEverPublished sticks', () => {
    const view = harness(conferenceView);
    view.given('conference-c1', created, {
      type: 'ConferenceUpdated',
      data: { conferenceId: 'c1', ...conferenceDetails, name: 'CQRS Summit 2027', startDate: '2027-04-01' },
    });
    view.given('conference-c1', { type: 'ConferencePublished', data: { conferenceId: 'c1' } });
    assert.equal(view.get<ConferenceView>(CONFERENCE, 'c1')?.isPublished, true);
    view.given('conference-c1', { type: 'ConferenceUnpublished', data: { conferenceId: 'c1' } });
    const conference = view.get<ConferenceView>(CONFERENCE, 'c1');
    assert.equal(conference?.name, 'CQRS Summit 2027');
    assert.equal(conference?.startDate, '2027-04-01');
    assert.equal(conference?.isPublished, false);
    assert.equal(conference?.wasEverPublished, true);
  });

  test('keeps a summary of the conference for the public list while it is published', () => {
    const view = harness(conferenceView);
    const summary = () => view.get<PublishedConferenceView>(PUBLISHED_CONFERENCE, 'c1');
    const updated = (name: string): RegistrationEvent => ({
      type: 'ConferenceUpdated',
      data: { conferenceId: 'c1', ...conferenceDetails, name },
    });
    view.given('conference-c1', created, updated('Not listed yet'));
    assert.equal(summary(), undefined);
    view.given('conference-c1', { type: 'ConferencePublished', data: { conferenceId: 'c1' } });
    const { name, tagline, location, startDate, endDate } = conferenceDetails;
    assert.deepEqual(summary(), {
      id: 'c1',
      slug: 'cqrs27',
      tagline,
      location,
      startDate,
      endDate,
      name: 'Not listed yet',
    });
    view.given('conference-c1', updated(name));
    assert.equal(summary()?.name, name);
    view.given(
      'conference-c1',
      { type: 'ConferenceUnpublished', data: { conferenceId: 'c1' } },
      updated('Hidden'),
    );
    assert.equal(summary(), undefined);
  });

  test('a seat type starts with nothing available until the availability aggregate adds its seats', () => {
    const view = harness(conferenceView);
    const seatCreated: RegistrationEvent = {
      type: 'SeatCreated',
      data: {
        conferenceId: 'c1',
        seatTypeId: 's1',
        name: 'General',
        description: 'Day pass',
        priceCents: 19900,
        quantity: 200,
      },
    };
    view.given('conference-c1', created, seatCreated);
    const available = () => view.get<ConferenceView>(CONFERENCE, 'c1')?.seatTypes.map((s) => s.available);
    assert.deepEqual(available(), [0]);
    view.given('seatsAvailability-c1', {
      type: 'AvailableSeatsChanged',
      data: { conferenceId: 'c1', seats: [seat('s1', 200)] },
    });
    assert.deepEqual(available(), [200]);
    view.given('seatsAvailability-c1', {
      type: 'SeatsReserved',
      data: {
        conferenceId: 'c1',
        reservationId: 'o1',
        reservationDetails: [seat('s1', 50)],
        availableSeatsChanged: [seat('s1', -50)],
      },
    });
    assert.deepEqual(available(), [150]);
    view.given('seatsAvailability-c1', {
      type: 'SeatsReservationCancelled',
      data: { conferenceId: 'c1', reservationId: 'o1', availableSeatsChanged: [seat('s1', 50)] },
    });
    assert.deepEqual(available(), [200]);
  });

  test('seat changes are reflected; negative remaining shows as none available; deleted types go', () => {
    const view = harness(conferenceView);
    const base = { conferenceId: 'c1', description: 'd', priceCents: 1000 };
    view.given(
      'conference-c1',
      created,
      { type: 'SeatCreated', data: { ...base, seatTypeId: 's1', name: 'General', quantity: 10 } },
      { type: 'SeatCreated', data: { ...base, seatTypeId: 's2', name: 'Precon', quantity: 5 } },
    );
    view.given('seatsAvailability-c1', {
      type: 'AvailableSeatsChanged',
      data: { conferenceId: 'c1', seats: [seat('s1', 10), seat('s1', -15), seat('s2', 5)] },
    });
    view.given(
      'conference-c1',
      {
        type: 'SeatUpdated',
        data: {
          ...base,
          seatTypeId: 's1',
          name: 'General_Updated',
          quantity: 20,
          previousQuantity: 10,
          priceCents: 1500,
        },
      },
      { type: 'SeatDeleted', data: { conferenceId: 'c1', seatTypeId: 's2', quantity: 5 } },
    );
    const conference = view.get<ConferenceView>(CONFERENCE, 'c1');
    assert.deepEqual(
      conference?.seatTypes.map(({ name, priceCents, quantity, available }) => ({
        name,
        priceCents,
        quantity,
        available,
      })),
      [{ name: 'General_Updated', priceCents: 1500, quantity: 20, available: 0 }],
    );
    assert.equal(conference?.remaining.s1, -5);
  });
});

describe('order view', () => {
  const placed: RegistrationEvent = {
    type: 'OrderPlaced',
    data: {
      orderId: 'o1',
      conferenceId: 'c1',
      seats: [seat('s1', 5), seat('s2', 0)],
      reservationAutoExpiration: 900_000,
      accessCode: 'XYZ789',
    },
  };
  const totals = (lines: [string, number, number][]): RegistrationEvent => ({
    type: 'OrderTotalsCalculated',
    data: {
      orderId: 'o1',
      lines: lines.map(([seatTypeId, quantity, unitPriceCents]) => ({
        seatTypeId,
        quantity,
        unitPriceCents,
        lineTotalCents: quantity * unitPriceCents,
      })),
      totalCents: lines.reduce((sum, [, quantity, price]) => sum + quantity * price, 0),
      isFreeOfCharge: lines.every(([, quantity, price]) => quantity * price === 0),
    },
  });

  test('a placed and priced order is pending with its lines, total and version; the owner sees it', () => {
    const view = harness(orderView);
    view.given(
      'order-o1',
      placed,
      totals([
        ['s1', 5, 1000],
        ['s2', 0, 2500],
      ]),
    );
    const order = view.get<OrderView>(ORDER, 'o1');
    assert.equal(order?.status, 'pending');
    assert.equal(order?.version, 2);
    assert.equal(order?.totalCents, 5000);
    assert.equal(order?.isFreeOfCharge, false);
    assert.deepEqual(order?.lines, [
      { seatTypeId: 's1', requested: 5, reserved: 0, unitPriceCents: 1000, lineTotalCents: 5000 },
      { seatTypeId: 's2', requested: 0, reserved: 0, unitPriceCents: 2500, lineTotalCents: 0 },
    ]);
    assert.deepEqual(view.find<ConferenceOrderView>(CONFERENCE_ORDER, 'c1'), [
      {
        orderId: 'o1',
        conferenceId: 'c1',
        accessCode: 'XYZ789',
        status: 'pending',
        totalCents: 5000,
        registrant: null,
      },
    ]);
  });

  test('reservations: complete → reserved; partial → partiallyReserved with recalculated totals; none → rejected', () => {
    const full = harness(orderView);
    full.given('order-o1', placed, totals([['s1', 5, 1000]]), {
      type: 'OrderReservationCompleted',
      data: { orderId: 'o1', reservationExpiration: 800_000, seats: [seat('s1', 5)] },
    });
    assert.equal(full.get<OrderView>(ORDER, 'o1')?.status, 'reserved');
    assert.equal(full.get<OrderView>(ORDER, 'o1')?.reservationExpiresAt, 800_000);
    assert.equal(full.get<OrderView>(ORDER, 'o1')?.lines[0]?.reserved, 5);

    const partial = harness(orderView);
    partial.given(
      'order-o1',
      placed,
      totals([['s1', 5, 1000]]),
      {
        type: 'OrderPartiallyReserved',
        data: { orderId: 'o1', reservationExpiration: 800_000, seats: [seat('s1', 3)] },
      },
      totals([['s1', 3, 1000]]),
    );
    const order = partial.get<OrderView>(ORDER, 'o1');
    assert.equal(order?.status, 'partiallyReserved');
    assert.deepEqual(order?.lines[0], {
      seatTypeId: 's1',
      requested: 5,
      reserved: 3,
      unitPriceCents: 1000,
      lineTotalCents: 3000,
    });
    assert.equal(order?.totalCents, 3000);

    const none = harness(orderView);
    none.given('order-o1', placed, {
      type: 'OrderPartiallyReserved',
      data: { orderId: 'o1', reservationExpiration: 800_000, seats: [] },
    });
    assert.equal(none.get<OrderView>(ORDER, 'o1')?.status, 'rejected');
  });

  test('an update starts over as pending; the registrant makes the order findable by e-mail and access code', () => {
    const view = harness(orderView);
    view.given('order-o1', placed, totals([['s1', 5, 1000]]), {
      type: 'OrderReservationCompleted',
      data: { orderId: 'o1', reservationExpiration: 800_000, seats: [seat('s1', 5)] },
    });
    view.given('order-o1', { type: 'OrderUpdated', data: { orderId: 'o1', seats: [seat('s1', 2)] } });
    assert.equal(view.get<OrderView>(ORDER, 'o1')?.status, 'pending');
    assert.deepEqual(
      view.get<OrderView>(ORDER, 'o1')?.lines.map((l) => [l.requested, l.reserved]),
      [[2, 0]],
    );
    assert.deepEqual(view.find(ORDER, orderLookup('a@b.c', 'XYZ789')), []);
    view.given('order-o1', {
      type: 'OrderRegistrantAssigned',
      data: { orderId: 'o1', firstName: 'Ann', lastName: 'Lee', email: 'Ann@Example.com' },
    });
    const [found] = view.find<OrderView>(ORDER, orderLookup(' ann@example.com', 'XYZ789'));
    assert.equal(found?.orderId, 'o1');
    assert.deepEqual(view.get<ConferenceOrderView>(CONFERENCE_ORDER, 'o1')?.registrant, {
      firstName: 'Ann',
      lastName: 'Lee',
      email: 'Ann@Example.com',
    });
  });

  test('confirmed clears the expiry and marks the owner row paid; expired keeps the order and drops the owner row', () => {
    const confirmed = harness(orderView);
    confirmed.given('order-o1', placed, { type: 'OrderConfirmed', data: { orderId: 'o1' } });
    assert.equal(confirmed.get<OrderView>(ORDER, 'o1')?.status, 'confirmed');
    assert.equal(confirmed.get<OrderView>(ORDER, 'o1')?.reservationExpiresAt, null);
    assert.equal(confirmed.get<ConferenceOrderView>(CONFERENCE_ORDER, 'o1')?.status, 'paid');

    const expired = harness(orderView);
    expired.given('order-o1', placed, { type: 'OrderExpired', data: { orderId: 'o1' } });
    assert.equal(expired.get<OrderView>(ORDER, 'o1')?.status, 'expired');
    assert.equal(expired.get(CONFERENCE_ORDER, 'o1'), undefined);
  });

  test('seat assignments: created empty, assigned, updated, unassigned', () => {
    const view = harness(orderView);
    const ann = { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' };
    view.given(
      'seatAssignments-o1',
      {
        type: 'SeatAssignmentsCreated',
        data: {
          assignmentsId: 'o1',
          orderId: 'o1',
          seats: [
            { position: 0, seatTypeId: 's1' },
            { position: 1, seatTypeId: 's1' },
          ],
        },
      },
      { type: 'SeatAssigned', data: { assignmentsId: 'o1', position: 1, seatTypeId: 's1', attendee: ann } },
    );
    assert.deepEqual(
      view.get<AssignmentsView>(ASSIGNMENTS, 'o1')?.seats.map((s) => s.attendee),
      [null, ann],
    );
    view.given('seatAssignments-o1', {
      type: 'SeatAssignmentUpdated',
      data: { assignmentsId: 'o1', position: 1, attendee: { ...ann, lastName: 'Li' } },
    });
    assert.equal(view.get<AssignmentsView>(ASSIGNMENTS, 'o1')?.seats[1]?.attendee?.lastName, 'Li');
    view.given('seatAssignments-o1', { type: 'SeatUnassigned', data: { assignmentsId: 'o1', position: 1 } });
    assert.deepEqual(
      view.get<AssignmentsView>(ASSIGNMENTS, 'o1')?.seats.map((s) => s.attendee),
      [null, null],
    );
  });

  test('payments: initiated, then completed or rejected', () => {
    const view = harness(orderView);
    const initiated: RegistrationEvent = {
      type: 'PaymentInitiated',
      data: {
        paymentId: 'p1',
        paymentSourceId: 'o1',
        conferenceId: 'c1',
        description: 'Registration',
        totalCents: 5000,
      },
    };
    view.given('payment-p1', initiated, {
      type: 'PaymentCompleted',
      data: { paymentId: 'p1', paymentSourceId: 'o1' },
    });
    assert.deepEqual(view.get<PaymentView>(PAYMENT, 'p1'), {
      paymentId: 'p1',
      orderId: 'o1',
      conferenceId: 'c1',
      description: 'Registration',
      totalCents: 5000,
      status: 'completed',
    });
    view.given(
      'payment-p2',
      { ...initiated, data: { ...initiated.data, paymentId: 'p2' } } as RegistrationEvent,
      {
        type: 'PaymentRejected',
        data: { paymentId: 'p2', paymentSourceId: 'o1' },
      },
    );
    assert.equal(view.get<PaymentView>(PAYMENT, 'p2')?.status, 'rejected');
  });
});
