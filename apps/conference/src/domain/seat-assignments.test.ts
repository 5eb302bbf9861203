import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PersonalInfo, SeatAssignmentsEvent } from './contracts.js';
import { NotFoundError, ValidationError } from './errors.js';
import { type SeatAssignmentsCommand, seatAssignmentsDecider } from './seat-assignments.js';
import { given as specGiven } from './spec.js';

const assignmentsId = 'assignments-1';
const orderId = 'order-1';
const A = 'seat-type-a';
const B = 'seat-type-b';

const { initialState, evolve } = seatAssignmentsDecider;
const fold = (events: readonly SeatAssignmentsEvent[], from = initialState()) => events.reduce(evolve, from);

/** given(history).when(command) → the events decided; `.state` is the state after the history. */
const given = (...history: SeatAssignmentsEvent[]) => specGiven(seatAssignmentsDecider, history);

const create = (...lines: [string, number][]): SeatAssignmentsCommand => ({
  type: 'CreateSeatAssignments',
  data: { assignmentsId, orderId, seats: lines.map(([seatTypeId, quantity]) => ({ seatTypeId, quantity })) },
});
const assign = (position: number, attendee: PersonalInfo): SeatAssignmentsCommand => ({
  type: 'AssignSeat',
  data: { assignmentsId, position, attendee },
});
const unassign = (position: number): SeatAssignmentsCommand => ({
  type: 'UnassignSeat',
  data: { assignmentsId, position },
});

/** Two seats: position 0 of type A, position 1 of type B. */
const created: SeatAssignmentsEvent = {
  type: 'SeatAssignmentsCreated',
  data: {
    assignmentsId,
    orderId,
    seats: [
      { position: 0, seatTypeId: A },
      { position: 1, seatTypeId: B },
    ],
  },
};
const ann: PersonalInfo = { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' };
const bob: PersonalInfo = { firstName: 'Bob', lastName: 'Kim', email: 'bob@example.com' };
const assigned = (position: number, seatTypeId: string, attendee: PersonalInfo): SeatAssignmentsEvent => ({
  type: 'SeatAssigned',
  data: { assignmentsId, position, seatTypeId, attendee },
});
const unassigned = (position: number): SeatAssignmentsEvent => ({
  type: 'SeatUnassigned',
  data: { assignmentsId, position },
});

const isValidationError = (field: string, message?: string) => (error: unknown) =>
  error instanceof ValidationError &&
  (message === undefined ? field in error.fields : error.fields[field] === message);

describe('SeatAssignments: creating', () => {
  test('an order of 5 + 10 seats gets 15 positions, in the order of its lines', () => {
    const [event, ...rest] = given().when(create([A, 5], [B, 10]));
    assert.equal(rest.length, 0);
    assert.ok(event?.type === 'SeatAssignmentsCreated');
    assert.equal(event.data.assignmentsId, assignmentsId);
    assert.notEqual(event.data.assignmentsId, event.data.orderId);
    assert.equal(event.data.orderId, orderId);
    assert.deepEqual(
      event.data.seats,
      Array.from({ length: 15 }, (_, position) => ({ position, seatTypeId: position < 5 ? A : B })),
    );
  });

  test('lines of zero seats get no position', () => {
    assert.deepEqual(given().when(create([A, 1], [B, 0], ['seat-type-c', 1])), [
      {
        type: 'SeatAssignmentsCreated',
        data: {
          assignmentsId,
          orderId,
          seats: [
            { position: 0, seatTypeId: A },
            { position: 1, seatTypeId: 'seat-type-c' },
          ],
        },
      },
    ]);
  });

  test('creating them again does nothing (a redelivered OrderConfirmed)', () => {
    assert.deepEqual(given(created).when(create([A, 5])), []);
  });

  test('a quantity that is not a whole number ≥ 0 is refused', () => {
    assert.throws(() => given().when(create([A, -1])), isValidationError('seats'));
    assert.throws(() => given().when(create([A, 1.5])), isValidationError('seats'));
  });

  test('every position starts with nobody assigned', () => {
    assert.deepEqual(given(created).state, {
      assignmentsId,
      orderId,
      seats: [
        { position: 0, seatTypeId: A, attendee: null },
        { position: 1, seatTypeId: B, attendee: null },
      ],
    });
  });
});

describe('SeatAssignments: assigning', () => {
  test('assigning an unassigned seat assigns it, with its seat type', () => {
    const assignments = given(created);
    const events = assignments.when(assign(1, ann));
    assert.deepEqual(events, [assigned(1, B, ann)]);
    assert.deepEqual(fold(events, assignments.state)?.seats[1]?.attendee, ann);
  });

  test('assigning someone else (another email) unassigns the seat first', () => {
    const assignments = given(created, assigned(0, A, ann));
    const events = assignments.when(assign(0, bob));
    assert.deepEqual(events, [unassigned(0), assigned(0, A, bob)]);
    assert.deepEqual(fold(events, assignments.state)?.seats[0]?.attendee, bob);
  });

  test('a new name for the same email (in any case) updates the assignment', () => {
    const renamed = { firstName: 'Annie', lastName: 'Lee', email: 'ANN@example.com' };
    const assignments = given(created, assigned(0, A, ann));
    const events = assignments.when(assign(0, renamed));
    assert.deepEqual(events, [
      { type: 'SeatAssignmentUpdated', data: { assignmentsId, position: 0, attendee: renamed } },
    ]);
    assert.deepEqual(fold(events, assignments.state)?.seats[0]?.attendee, renamed);
    assert.equal(assignments.when(assign(0, { ...ann, lastName: 'Li' }))[0]?.type, 'SeatAssignmentUpdated');
  });

  test('the same attendee, whatever the case of the email and names, changes nothing', () => {
    const assignments = given(created, assigned(0, A, ann));
    assert.deepEqual(assignments.when(assign(0, ann)), []);
    assert.deepEqual(
      assignments.when(assign(0, { firstName: 'ANN', lastName: 'lee', email: 'Ann@Example.COM' })),
      [],
    );
  });

  test('an unknown position is refused', () => {
    for (const position of [2, -1, 0.5]) {
      assert.throws(() => given(created).when(assign(position, ann)), isValidationError('position'));
      assert.throws(() => given(created).when(unassign(position)), isValidationError('position'));
    }
  });

  test("the attendee's email is required and must look like one", () => {
    for (const email of ['', '   ']) {
      assert.throws(
        () => given(created).when(assign(0, { ...ann, email })),
        isValidationError('email', "The attendee's email is required."),
      );
    }
    for (const email of [
      'ann',
      'ann@example',
      '.ann@example.com',
      'ann.@example.com',
      'a..nn@example.com',
      'a nn@x.com',
    ]) {
      assert.throws(
        () => given(created).when(assign(0, { ...ann, email })),
        isValidationError('email', 'The provided email address is not valid.'),
      );
    }
  });

  test('commands for assignments that do not exist are refused', () => {
    assert.throws(() => given().when(assign(0, ann)), NotFoundError);
    assert.throws(() => given().when(unassign(0)), NotFoundError);
  });
});

describe('SeatAssignments: unassigning', () => {
  test('unassigning an assigned seat unassigns it', () => {
    const assignments = given(created, assigned(0, A, ann));
    const events = assignments.when(unassign(0));
    assert.deepEqual(events, [unassigned(0)]);
    assert.equal(fold(events, assignments.state)?.seats[0]?.attendee, null);
  });

  test('unassigning an unassigned seat does nothing', () => {
    assert.deepEqual(given(created).when(unassign(0)), []);
    assert.deepEqual(given(created, assigned(0, A, ann), unassigned(0)).when(unassign(0)), []);
  });
});

describe('SeatAssignments state', () => {
  test('is JSON as is, and evolve leaves the state it was given unchanged', () => {
    const history = [created, assigned(0, A, ann), assigned(1, B, bob), unassigned(1)];
    let state = initialState();
    for (const event of history) {
      const before = JSON.stringify(state);
      const next = evolve(state, event);
      assert.equal(JSON.stringify(state), before);
      state = next;
    }
    assert.deepEqual(JSON.parse(JSON.stringify(state)), state);
  });
});
