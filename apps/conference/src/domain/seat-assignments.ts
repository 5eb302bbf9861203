/**
 * SeatAssignments: the seats of a confirmed order, one position per seat, and who attends on each
 * (stream `seatAssignments-<assignmentsId>`).
 */
import type { Decider } from '@stratus/eventsourcing';
import type { CommandData, PersonalInfo, SeatAssignmentsEvent, SeatQuantity } from './contracts.js';
import { NotFoundError, ValidationError } from './errors.js';
import { EMAIL_PATTERN } from './personal-info.js';

export type SeatAssignmentsCommand =
  | {
      readonly type: 'CreateSeatAssignments';
      readonly data: {
        /** Derive it from the order id, so that a redelivered OrderConfirmed finds the same stream. */
        readonly assignmentsId: string;
        readonly orderId: string;
        /** The confirmed order's seats. */
        readonly seats: readonly SeatQuantity[];
      };
    }
  | { readonly type: 'AssignSeat'; readonly data: CommandData['AssignSeat'] }
  | { readonly type: 'UnassignSeat'; readonly data: CommandData['UnassignSeat'] };

export interface AssignableSeat {
  readonly position: number;
  readonly seatTypeId: string;
  /** Null while nobody is assigned. */
  readonly attendee: PersonalInfo | null;
}

export interface SeatAssignments {
  readonly assignmentsId: string;
  readonly orderId: string;
  /** Indexed by position. */
  readonly seats: readonly AssignableSeat[];
}

/** Null until the assignments are created. */
export type SeatAssignmentsState = SeatAssignments | null;

export const seatAssignmentsDecider: Decider<
  SeatAssignmentsState,
  SeatAssignmentsEvent,
  SeatAssignmentsCommand
> = {
  initialState: () => null,

  evolve(state, event) {
    if (event.type === 'SeatAssignmentsCreated') {
      const { assignmentsId, orderId, seats } = event.data;
      const unassigned = seats.map(({ position, seatTypeId }) => ({ position, seatTypeId, attendee: null }));
      return { assignmentsId, orderId, seats: unassigned };
    }
    // Only a broken stream has events before its creation.
    if (state === null) throw new NotFoundError('SeatAssignments', event.data.assignmentsId);
    const { position } = event.data;
    const attendee = event.type === 'SeatUnassigned' ? null : event.data.attendee;
    return {
      ...state,
      seats: state.seats.map((seat) => (seat.position === position ? { ...seat, attendee } : seat)),
    };
  },

  decide(command, state) {
    if (command.type === 'CreateSeatAssignments') {
      // Created once: a second OrderConfirmed for the same order must not make a second set.
      if (state !== null) return [];
      const { assignmentsId, orderId, seats } = command.data;
      if (!seats.every(({ quantity }) => Number.isSafeInteger(quantity) && quantity >= 0))
        throw new ValidationError({ seats: 'Each quantity must be a whole number ≥ 0.' });
      const positions = seats.flatMap(({ seatTypeId, quantity }) => Array<string>(quantity).fill(seatTypeId));
      return [
        {
          type: 'SeatAssignmentsCreated',
          data: {
            assignmentsId,
            orderId,
            seats: positions.map((seatTypeId, position) => ({ position, seatTypeId })),
          },
        },
      ];
    }
    const { assignmentsId, position } = command.data;
    if (state === null) throw new NotFoundError('SeatAssignments', assignmentsId);
    const seat = state.seats[position];
    if (seat === undefined)
      throw new ValidationError({ position: `There is no seat at position ${position}.` });
    const current = seat.attendee;
    if (command.type === 'UnassignSeat') {
      return current === null ? [] : [{ type: 'SeatUnassigned', data: { assignmentsId, position } }];
    }
    const { attendee } = command.data;
    validateEmail(attendee.email);
    if (current === null || !sameText(current.email, attendee.email)) {
      const assigned = {
        type: 'SeatAssigned',
        data: { assignmentsId, position, seatTypeId: seat.seatTypeId, attendee },
      } as const;
      return current === null
        ? [assigned]
        : [{ type: 'SeatUnassigned', data: { assignmentsId, position } }, assigned];
    }
    if (!sameText(current.firstName, attendee.firstName) || !sameText(current.lastName, attendee.lastName)) {
      return [{ type: 'SeatAssignmentUpdated', data: { assignmentsId, position, attendee } }];
    }
    return [];
  },
};

function validateEmail(email: string): void {
  if (typeof email !== 'string' || email.trim() === '')
    throw new ValidationError({ email: "The attendee's email is required." });
  if (!EMAIL_PATTERN.test(email))
    throw new ValidationError({ email: 'The provided email address is not valid.' });
}

/** The Journey compares attendees' emails and names ignoring case. */
function sameText(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
