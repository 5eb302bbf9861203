import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AggregateRepository, EventStore, MemoryEventStoreBackend } from '@stratus/eventsourcing';
import { VirtualClock } from '@stratus/testkit';
import fc from 'fast-check';
import type { SeatQuantity, SeatsAvailabilityEvent } from './contracts.js';
import { ValidationError } from './errors.js';
import {
  remainingSeats,
  type SeatsAvailabilityCommand,
  type SeatsAvailabilityState,
  seatsAvailabilityDecider,
  seatsAvailabilitySnapshots,
} from './seats-availability.js';
import { given as specGiven } from './spec.js';

const conferenceId = 'conf-1';
const A = 'seat-type-a';
const B = 'seat-type-b';
const R = 'reservation-1';

const { initialState, evolve } = seatsAvailabilityDecider;
const fold = (events: readonly SeatsAvailabilityEvent[], from = initialState()) =>
  events.reduce(evolve, from);

/** given(history).when(command) → the events decided; `.state` is the state after the history. */
const given = (...history: SeatsAvailabilityEvent[]) => specGiven(seatsAvailabilityDecider, history);

const seats = (...pairs: [string, number][]): SeatQuantity[] =>
  pairs.map(([seatTypeId, quantity]) => ({ seatTypeId, quantity }));

const changed = (...pairs: [string, number][]): SeatsAvailabilityEvent => ({
  type: 'AvailableSeatsChanged',
  data: { conferenceId, seats: seats(...pairs) },
});
const reserved = (
  reservationId: string,
  details: [string, number][],
  changes: [string, number][],
): SeatsAvailabilityEvent => ({
  type: 'SeatsReserved',
  data: {
    conferenceId,
    reservationId,
    reservationDetails: seats(...details),
    availableSeatsChanged: seats(...changes),
  },
});

const add = (seatTypeId: string, quantity: number): SeatsAvailabilityCommand => ({
  type: 'AddSeats',
  data: { conferenceId, seatTypeId, quantity },
});
const remove = (seatTypeId: string, quantity: number): SeatsAvailabilityCommand => ({
  type: 'RemoveSeats',
  data: { conferenceId, seatTypeId, quantity },
});
const reserve = (reservationId: string, ...wanted: [string, number][]): SeatsAvailabilityCommand => ({
  type: 'MakeSeatReservation',
  data: { conferenceId, reservationId, seats: seats(...wanted) },
});
const cancel = (reservationId: string): SeatsAvailabilityCommand => ({
  type: 'CancelSeatReservation',
  data: { conferenceId, reservationId },
});
const commit = (reservationId: string): SeatsAvailabilityCommand => ({
  type: 'CommitSeatReservation',
  data: { conferenceId, reservationId },
});

const isValidationError = (field: string) => (error: unknown) =>
  error instanceof ValidationError && field in error.fields;

describe('SeatsAvailability: adding and removing seats', () => {
  test('adding seats of a new type makes it known with that many seats', () => {
    const events = given().when(add(A, 10));
    assert.deepEqual(events, [changed([A, 10])]);
    assert.deepEqual(remainingSeats(fold(events)), seats([A, 10]));
  });

  test('adding seats of an existing type increases what remains', () => {
    const availability = given(changed([A, 10]), changed([B, 12]));
    const events = availability.when(add(A, 5));
    assert.deepEqual(events, [changed([A, 5])]);
    assert.deepEqual(remainingSeats(fold(events, availability.state)), seats([A, 15], [B, 12]));
  });

  test('removing seats decreases what remains, below zero if asked to', () => {
    const availability = given(changed([A, 10]));
    assert.deepEqual(availability.when(remove(A, 5)), [changed([A, -5])]);
    assert.deepEqual(remainingSeats(fold([changed([A, -15])], availability.state)), seats([A, -5]));
  });

  test('zero seats of a known type change nothing; of a new type they make it known', () => {
    assert.deepEqual(given(changed([A, 10])).when(add(A, 0)), []);
    assert.deepEqual(given(changed([A, 10])).when(remove(A, 0)), []);
    assert.deepEqual(given().when(add(A, 0)), [changed([A, 0])]);
  });

  test('a quantity that is not a whole number ≥ 0 is refused', () => {
    for (const quantity of [-1, 1.5, Number.NaN]) {
      assert.throws(() => given().when(add(A, quantity)), isValidationError('quantity'));
      assert.throws(() => given().when(remove(A, quantity)), isValidationError('quantity'));
    }
  });
});

describe('SeatsAvailability: reserving', () => {
  test('reserving fewer seats than remain holds them all', () => {
    const availability = given(changed([A, 10]));
    const events = availability.when(reserve(R, [A, 4]));
    assert.deepEqual(events, [reserved(R, [[A, 4]], [[A, -4]])]);
    const after = fold(events, availability.state);
    assert.deepEqual(remainingSeats(after), seats([A, 6]));
    assert.deepEqual(after.pending.get(R), seats([A, 4]));
  });

  test('reserving more seats than the total holds what remains', () => {
    assert.deepEqual(given(changed([A, 10])).when(reserve(R, [A, 11])), [reserved(R, [[A, 10]], [[A, -10]])]);
  });

  test('after removing seats, a reservation gets only what is left', () => {
    const availability = given(changed([A, 10]));
    const removed = availability.when(remove(A, 5));
    assert.deepEqual(removed, [changed([A, -5])]);
    assert.deepEqual(given(changed([A, 10]), ...removed).when(reserve(R, [A, 10])), [
      reserved(R, [[A, 5]], [[A, -5]]),
    ]);
  });

  test('negative remaining seats count as none', () => {
    assert.deepEqual(given(changed([A, 10]), changed([A, -15])).when(reserve(R, [A, 3])), [
      reserved(R, [], []),
    ]);
    // A reservation keeps what it holds even though the seats left went below zero under it.
    const history = [changed([A, 10]), reserved(R, [[A, 6]], [[A, -6]]), changed([A, -10])];
    assert.deepEqual(given(...history).when(reserve(R, [A, 8])), [reserved(R, [[A, 6]], [])]);
  });

  test('an unknown seat type is refused and nothing is reserved', () => {
    assert.throws(() => given(changed([A, 10])).when(reserve(R, [A, 1], [B, 1])), isValidationError('seats'));
    assert.throws(() => given().when(reserve(R, [A, 0])), isValidationError('seats'));
  });

  test('a quantity that is not a whole number ≥ 0 is refused', () => {
    assert.throws(() => given(changed([A, 10])).when(reserve(R, [A, -1])), isValidationError('seats'));
    assert.throws(() => given(changed([A, 10])).when(reserve(R, [A, 0.5])), isValidationError('seats'));
  });

  test('a seat type listed twice is asked for in total', () => {
    assert.deepEqual(given(changed([A, 10])).when(reserve(R, [A, 2], [A, 3])), [
      reserved(R, [[A, 5]], [[A, -5]]),
    ]);
  });

  test('a reservation that gets nothing still answers, with empty details', () => {
    const availability = given(changed([A, 10]), reserved('other', [[A, 10]], [[A, -10]]));
    const events = availability.when(reserve(R, [A, 2]));
    assert.deepEqual(events, [reserved(R, [], [])]);
    assert.equal(fold(events, availability.state).pending.has(R), false);
  });

  test('the event carries the conference id', () => {
    const [event] = given(changed([A, 10])).when(reserve(R, [A, 1]));
    assert.equal(event?.data.conferenceId, conferenceId);
  });
});

describe('SeatsAvailability: an existing reservation of 6 A (4 A and 12 B left)', () => {
  const history = [changed([A, 10]), changed([B, 12]), reserved(R, [[A, 6]], [[A, -6]])];

  test('growing it to 8 takes 2 more', () => {
    assert.deepEqual(given(...history).when(reserve(R, [A, 8])), [reserved(R, [[A, 8]], [[A, -2]])]);
  });

  test('shrinking it to 2 gives 4 back', () => {
    const events = given(...history).when(reserve(R, [A, 2]));
    assert.deepEqual(events, [reserved(R, [[A, 2]], [[A, 4]])]);
    assert.deepEqual(remainingSeats(fold([...history, ...events])), seats([A, 8], [B, 12]));
  });

  test('growing it past the total holds all 10', () => {
    assert.deepEqual(given(...history).when(reserve(R, [A, 12])), [reserved(R, [[A, 10]], [[A, -4]])]);
  });

  test('switching it to 3 B takes the B seats and releases the A seats', () => {
    const events = given(...history).when(reserve(R, [B, 3]));
    assert.deepEqual(events, [
      reserved(
        R,
        [[B, 3]],
        [
          [B, -3],
          [A, 6],
        ],
      ),
    ]);
    const after = fold([...history, ...events]);
    assert.deepEqual(remainingSeats(after), seats([A, 10], [B, 9]));
    assert.deepEqual(after.pending.get(R), seats([B, 3]));
  });

  test('asking for nothing releases it all and forgets it', () => {
    const events = given(...history).when(reserve(R));
    assert.deepEqual(events, [reserved(R, [], [[A, 6]])]);
    assert.equal(fold([...history, ...events]).pending.has(R), false);
  });

  test('re-sending the same request answers again with the same details and no change', () => {
    assert.deepEqual(given(...history).when(reserve(R, [A, 6])), [reserved(R, [[A, 6]], [])]);
  });

  test('a new reservation of 5 gets the 4 left', () => {
    assert.deepEqual(given(...history).when(reserve('reservation-2', [A, 5])), [
      reserved('reservation-2', [[A, 4]], [[A, -4]]),
    ]);
  });

  test('cancelling it gives the 6 seats back', () => {
    const events = given(...history).when(cancel(R));
    assert.deepEqual(events, [
      {
        type: 'SeatsReservationCancelled',
        data: { conferenceId, reservationId: R, availableSeatsChanged: seats([A, 6]) },
      },
    ]);
    const after = fold([...history, ...events]);
    assert.deepEqual(remainingSeats(after), seats([A, 10], [B, 12]));
    assert.equal(after.pending.has(R), false);
  });

  test('committing it forgets the reservation and the seats stay taken', () => {
    const events = given(...history).when(commit(R));
    assert.deepEqual(events, [
      { type: 'SeatsReservationCommitted', data: { conferenceId, reservationId: R } },
    ]);
    const after = fold([...history, ...events]);
    assert.deepEqual(remainingSeats(after), seats([A, 4], [B, 12]));
    assert.equal(after.pending.has(R), false);
  });

  test('cancelling or committing an unknown reservation does nothing', () => {
    assert.deepEqual(given(...history).when(cancel('unknown')), []);
    assert.deepEqual(given(...history).when(commit('unknown')), []);
    const committed = {
      type: 'SeatsReservationCommitted',
      data: { conferenceId, reservationId: R },
    } as const;
    assert.deepEqual(given(...history, committed).when(cancel(R)), []);
    assert.deepEqual(given(...history, committed).when(commit(R)), []);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Properties over random command sequences

const seatTypeArb = fc.constantFrom(A, B, 'seat-type-c');
const reservationArb = fc.constantFrom('r1', 'r2', 'r3');
const commandArb: fc.Arbitrary<SeatsAvailabilityCommand> = fc.oneof(
  fc.tuple(seatTypeArb, fc.nat(20)).map(([type, quantity]) => add(type, quantity)),
  fc.tuple(seatTypeArb, fc.nat(8)).map(([type, quantity]) => remove(type, quantity)),
  fc
    .tuple(reservationArb, fc.array(fc.tuple(seatTypeArb, fc.nat(12)), { maxLength: 3 }))
    .map(([id, wanted]) => reserve(id, ...wanted)),
  reservationArb.map(cancel),
  reservationArb.map(commit),
);

/** Runs the commands one after another (skipping refused ones) and returns the events they produced. */
function run(commands: readonly SeatsAvailabilityCommand[]): SeatsAvailabilityEvent[] {
  const events: SeatsAvailabilityEvent[] = [];
  let state = initialState();
  for (const command of commands) {
    try {
      for (const event of [seatsAvailabilityDecider.decide?.(command, state) ?? []].flat()) {
        events.push(event);
        state = evolve(state, event);
      }
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
    }
  }
  return events;
}

const sumOf = (list: readonly SeatQuantity[] | undefined, seatTypeId: string) =>
  (list ?? []).reduce((sum, seat) => (seat.seatTypeId === seatTypeId ? sum + seat.quantity : sum), 0);

describe('SeatsAvailability properties', () => {
  test('a snapshot round trip plus the remaining events equals a full replay', () => {
    const { toJson, fromJson } = seatsAvailabilitySnapshots;
    fc.assert(
      fc.property(fc.array(commandArb, { maxLength: 40 }), fc.nat(), (commands, cut) => {
        const events = run(commands);
        const at = cut % (events.length + 1);
        const stored = JSON.stringify(toJson!(fold(events.slice(0, at))));
        const restored: SeatsAvailabilityState = fromJson!(JSON.parse(stored));
        assert.deepEqual(fold(events.slice(at), restored), fold(events));
      }),
    );
  });

  test('seats are neither made nor lost, and evolve leaves the state it was given unchanged', () => {
    fc.assert(
      fc.property(fc.array(commandArb, { maxLength: 40 }), (commands) => {
        const added = new Map<string, number>();
        const committed = new Map<string, number>();
        let state = initialState();
        for (const event of run(commands)) {
          if (event.type === 'AvailableSeatsChanged') {
            for (const { seatTypeId, quantity } of event.data.seats)
              added.set(seatTypeId, (added.get(seatTypeId) ?? 0) + quantity);
          }
          if (event.type === 'SeatsReservationCommitted') {
            for (const { seatTypeId, quantity } of state.pending.get(event.data.reservationId) ?? [])
              committed.set(seatTypeId, (committed.get(seatTypeId) ?? 0) + quantity);
          }
          const before = JSON.stringify(seatsAvailabilitySnapshots.toJson!(state));
          const next = evolve(state, event);
          assert.equal(JSON.stringify(seatsAvailabilitySnapshots.toJson!(state)), before);
          state = next;
        }
        for (const [seatTypeId, total] of added) {
          const held = [...state.pending.values()].reduce((sum, list) => sum + sumOf(list, seatTypeId), 0);
          const left = state.remaining.get(seatTypeId) ?? 0;
          assert.equal(left + held + (committed.get(seatTypeId) ?? 0), total);
        }
        for (const held of state.pending.values()) assert.ok(held.every((seat) => seat.quantity > 0));
      }),
    );
  });
});

describe('SeatsAvailability memento', () => {
  test('a repository loads the memento of version 2, and the next event gets version 3', async () => {
    const store = new EventStore({
      backend: new MemoryEventStoreBackend(),
      clock: new VirtualClock({ now: 0 }),
    });
    const options = {
      category: 'seatsAvailability',
      decider: seatsAvailabilityDecider,
      snapshots: seatsAvailabilitySnapshots,
    };
    const writer = new AggregateRepository(store, options);
    await writer.execute(conferenceId, add(A, 10));
    await writer.execute(conferenceId, reserve(R, [A, 4]));
    const taken = await writer.snapshot(conferenceId);
    assert.equal(taken.version, 2);
    const reader = new AggregateRepository(store, options);
    assert.deepEqual(await reader.load(conferenceId), taken);
    const next = await reader.execute(conferenceId, commit(R));
    assert.equal(next.version, 3);
    assert.deepEqual(remainingSeats(next.state), seats([A, 6]));
    assert.equal(next.state.pending.size, 0);
  });
});
