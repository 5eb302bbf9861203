/** The seats of a confirmed order and who attends on each: read them, name an attendee, leave a seat empty. */
import type { FastifyRequest } from 'fastify';
import { settledAssignments } from '../../app/queries.js';
import type { ConferenceSystem } from '../../app/system.js';
import type { PersonalInfo } from '../../domain/contracts.js';
import { NotFoundError } from '../../domain/errors.js';
import { assertValidPersonalInfo } from '../../domain/personal-info.js';
import {
  assignedSeats,
  type Handlers,
  param,
  SETTLE_MS,
  seatTypeNames,
  settle,
  uuidParam,
} from './support.js';

const POSITION = /^\d{1,6}$/;

type AssignmentHandlers = Pick<Handlers, 'getAssignments' | 'assignSeat' | 'unassignSeat'>;

export function seatAssignmentHandlers(system: ConferenceSystem): AssignmentHandlers {
  const { queries, commands } = system;

  /** The position in the path, of a seat the order's assignments have. */
  async function existingPosition(request: FastifyRequest, orderId: string): Promise<number> {
    const raw = param(request, 'position');
    if (!POSITION.test(raw)) throw new NotFoundError('Seat', raw);
    const position = Number(raw);
    const order = await queries.order(orderId);
    const assignments = order && (await settledAssignments(system, order, ['confirmed'], SETTLE_MS));
    if (assignments === undefined) throw new NotFoundError('SeatAssignments', orderId);
    if (!assignments.seats.some((seat) => seat.position === position)) throw new NotFoundError('Seat', raw);
    return position;
  }

  return {
    async getAssignments(request) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const order = await queries.order(orderId);
      const assignments = order && (await settledAssignments(system, order, ['confirmed'], SETTLE_MS));
      if (order === undefined || assignments === undefined)
        throw new NotFoundError('SeatAssignments', orderId);
      const names = seatTypeNames(await queries.conference(order.conferenceId));
      return { seats: assignedSeats(assignments, names) };
    },

    async assignSeat(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const position = await existingPosition(request, orderId);
      const { firstName, lastName, email } = request.body as PersonalInfo;
      const attendee = { firstName, lastName, email };
      assertValidPersonalInfo(attendee);
      await commands.send('AssignSeat', { assignmentsId: orderId, position, attendee });
      await settle(system, async () => {
        const seat = (await queries.assignments(orderId))?.seats.find((s) => s.position === position);
        return seat?.attendee != null && sameAttendee(seat.attendee, attendee);
      });
      return reply.code(204).send();
    },

    async unassignSeat(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const position = await existingPosition(request, orderId);
      await commands.send('UnassignSeat', { assignmentsId: orderId, position });
      await settle(
        system,
        async () =>
          (await queries.assignments(orderId))?.seats.find((s) => s.position === position)?.attendee === null,
      );
      return reply.code(204).send();
    },
  };
}

function sameAttendee(a: PersonalInfo, b: PersonalInfo): boolean {
  const same = (x: string, y: string) => x.toLowerCase() === y.toLowerCase();
  return same(a.email, b.email) && same(a.firstName, b.firstName) && same(a.lastName, b.lastName);
}
