/**
 * SeatsAvailability: the seats left of each seat type of one conference and the seats each pending reservation
 * holds (stream `seatsAvailability-<conferenceId>`). It is the contended aggregate every order goes through, so it
 * is the one that is snapshotted (the Journey's memento).
 */
import { type Decider, PersistentMap, type SnapshotOptions } from '@stratus/eventsourcing';
import type { CommandData, SeatQuantity, SeatsAvailabilityEvent } from './contracts.js';
import { ValidationError } from './errors.js';

export type SeatsAvailabilityCommand =
  | { readonly type: 'AddSeats'; readonly data: CommandData['AddSeats'] }
  | { readonly type: 'RemoveSeats'; readonly data: CommandData['RemoveSeats'] }
  | { readonly type: 'MakeSeatReservation'; readonly data: CommandData['MakeSeatReservation'] }
  | { readonly type: 'CancelSeatReservation'; readonly data: CommandData['CancelSeatReservation'] }
  | { readonly type: 'CommitSeatReservation'; readonly data: CommandData['CommitSeatReservation'] };

export interface SeatsAvailabilityState {
  /**
   * Seats left per seat type; a type is known once seats were added (or removed). Negative when RemoveSeats took
   * more than was left: reservations then read it as 0.
   */
  readonly remaining: ReadonlyMap<string, number>;
  /**
   * What each pending reservation holds, by reservation id (types with a non-zero quantity). Persistent: with the
   * Journey's 15-minute window a busy conference holds thousands, and copying them all per event made every
   * reservation slower than the last.
   */
  readonly pending: PersistentMap<readonly SeatQuantity[]>;
}

/** The seats left of each known seat type, in the order the types became known. */
export function remainingSeats(state: SeatsAvailabilityState): readonly SeatQuantity[] {
  return [...state.remaining].map(([seatTypeId, quantity]) => ({ seatTypeId, quantity }));
}

export const seatsAvailabilityDecider: Decider<
  SeatsAvailabilityState,
  SeatsAvailabilityEvent,
  SeatsAvailabilityCommand
> = {
  initialState: () => ({ remaining: new Map(), pending: PersistentMap.empty() }),

  evolve(state, event) {
    switch (event.type) {
      case 'AvailableSeatsChanged':
        return { ...state, remaining: withChanges(state.remaining, event.data.seats) };
      case 'SeatsReserved': {
        const { reservationId, reservationDetails, availableSeatsChanged } = event.data;
        const pending =
          reservationDetails.length === 0
            ? state.pending.delete(reservationId)
            : state.pending.set(reservationId, reservationDetails);
        return { remaining: withChanges(state.remaining, availableSeatsChanged), pending };
      }
      case 'SeatsReservationCommitted':
        // The seats stay taken: committing only forgets the reservation.
        return { ...state, pending: state.pending.delete(event.data.reservationId) };
      case 'SeatsReservationCancelled':
        return {
          remaining: withChanges(state.remaining, event.data.availableSeatsChanged),
          pending: state.pending.delete(event.data.reservationId),
        };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'AddSeats':
      case 'RemoveSeats': {
        const { conferenceId, seatTypeId, quantity } = command.data;
        if (!isCount(quantity))
          throw new ValidationError({ quantity: 'The quantity must be a whole number ≥ 0.' });
        // Zero seats of a known type change nothing; of a new type they still make the type known.
        if (quantity === 0 && state.remaining.has(seatTypeId)) return [];
        const delta = command.type === 'AddSeats' ? quantity : -quantity;
        return [
          { type: 'AvailableSeatsChanged', data: { conferenceId, seats: [{ seatTypeId, quantity: delta }] } },
        ];
      }
      case 'MakeSeatReservation':
        return [reserve(state, command.data)];
      case 'CancelSeatReservation': {
        const { conferenceId, reservationId } = command.data;
        const held = state.pending.get(reservationId);
        if (held === undefined) return [];
        return [
          {
            type: 'SeatsReservationCancelled',
            data: { conferenceId, reservationId, availableSeatsChanged: held },
          },
        ];
      }
      case 'CommitSeatReservation': {
        const { conferenceId, reservationId } = command.data;
        if (!state.pending.has(reservationId)) return [];
        return [{ type: 'SeatsReservationCommitted', data: { conferenceId, reservationId } }];
      }
    }
  },
};

/**
 * Sets what the reservation holds to what is wanted, as far as seats remain. Seat types it held but no longer wants
 * are released, and a reservation that gets nothing still yields SeatsReserved (with empty details), so the process
 * manager always hears back; re-sending the same request yields the same details and no change.
 */
function reserve(
  state: SeatsAvailabilityState,
  { conferenceId, reservationId, seats }: CommandData['MakeSeatReservation'],
): SeatsAvailabilityEvent {
  const wanted = new Map<string, number>();
  for (const { seatTypeId, quantity } of seats) {
    if (!state.remaining.has(seatTypeId))
      throw new ValidationError({ seats: `Unknown seat type ${JSON.stringify(seatTypeId)}.` });
    if (!isCount(quantity)) throw new ValidationError({ seats: 'Each quantity must be a whole number ≥ 0.' });
    wanted.set(seatTypeId, (wanted.get(seatTypeId) ?? 0) + quantity);
  }
  const held = new Map(state.pending.get(reservationId)?.map((seat) => [seat.seatTypeId, seat.quantity]));
  const reservationDetails: SeatQuantity[] = [];
  const availableSeatsChanged: SeatQuantity[] = [];
  for (const seatTypeId of new Set([...wanted.keys(), ...held.keys()])) {
    const existing = held.get(seatTypeId) ?? 0;
    const left = Math.max(state.remaining.get(seatTypeId) ?? 0, 0);
    const actual = Math.min(wanted.get(seatTypeId) ?? 0, left + existing);
    if (actual !== 0) reservationDetails.push({ seatTypeId, quantity: actual });
    if (actual !== existing) availableSeatsChanged.push({ seatTypeId, quantity: existing - actual });
  }
  return {
    type: 'SeatsReserved',
    data: { conferenceId, reservationId, reservationDetails, availableSeatsChanged },
  };
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function withChanges(
  remaining: ReadonlyMap<string, number>,
  changes: readonly SeatQuantity[],
): ReadonlyMap<string, number> {
  const next = new Map(remaining);
  for (const { seatTypeId, quantity } of changes)
    next.set(seatTypeId, (next.get(seatTypeId) ?? 0) + quantity);
  return next;
}

interface SeatsAvailabilityJson {
  readonly remaining: readonly [string, number][];
  readonly pending: readonly [string, readonly SeatQuantity[]][];
}

/** The memento: both maps as entry lists (Maps are not JSON). */
export const seatsAvailabilitySnapshots: SnapshotOptions<SeatsAvailabilityState> = {
  // Every order adds two or three events to its conference's stream; a snapshot bounds the replay after a restart.
  every: 100,
  schemaVersion: 1,
  toJson: (state): SeatsAvailabilityJson => ({
    remaining: [...state.remaining],
    pending: [...state.pending],
  }),
  fromJson(json) {
    const { remaining, pending } = json as SeatsAvailabilityJson;
    return { remaining: new Map(remaining), pending: PersistentMap.from(pending) };
  },
};
