/** "Assign Seats" of a confirmed order: the form, and AssignSeat / UnassignSeat for what changed. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { settledAssignments } from '../../../app/queries.js';
import type { PersonalInfo } from '../../../domain/contracts.js';
import { NotFoundError, ValidationError } from '../../../domain/errors.js';
import { personalInfoProblems } from '../../../domain/personal-info.js';
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { AssignmentsView, OrderView } from '../../../read-models/order-view.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { type Fields, fieldsOf, isId, type Site, seeOther, sendPage, VIEW_WAIT_MS } from '../support.js';
import { assignSeatsPage } from '../views/seat-assignment.js';
import { conferenceOf, mayOpenOrder, orderOf } from './public-support.js';

type SeatChange = { position: number; attendee: PersonalInfo } | { position: number; attendee: null };

/** What the posted form changes, and the problems of its seats by position. */
function seatChanges(assignments: AssignmentsView, values: Fields) {
  const errors: Record<string, string> = {};
  const changes: SeatChange[] = [];
  for (const seat of assignments.seats) {
    const n = seat.position;
    const posted = (field: string) => values[`${field}_${n}`];
    const email = posted('email')?.trim();
    if (email === undefined) continue;
    const before = seat.attendee;
    if (email === '') {
      if (before !== null) changes.push({ position: n, attendee: null });
      continue;
    }
    const { values: attendee, problems } = readForm(apiInputs.PersonalInfo, {
      firstName: posted('firstName'),
      lastName: posted('lastName'),
      email,
    });
    const messages = Object.values({ ...personalInfoProblems(attendee), ...problems });
    if (messages.length > 0) {
      errors[String(n)] = messages.join(' ');
      continue;
    }
    const same =
      before !== null &&
      before.firstName === attendee.firstName &&
      before.lastName === attendee.lastName &&
      before.email.toLowerCase() === attendee.email.toLowerCase();
    if (!same) changes.push({ position: n, attendee });
  }
  return { changes, errors };
}

export function seatAssignmentRoutes(app: FastifyInstance, site: Site): void {
  const { system } = site;
  const { queries, commands } = system;

  /** The order and its assignments, or undefined when the page was sent (404 without the order's token). */
  async function assignmentsOf(
    request: FastifyRequest,
    reply: FastifyReply,
    conference: ConferenceView,
    settling: readonly OrderView['status'][],
  ) {
    const { orderId } = fieldsOf(request.params);
    if (!isId(orderId)) return { order: undefined, assignments: undefined };
    if (!mayOpenOrder(site, request, reply, conference, orderId)) return undefined;
    const order = await orderOf(system, conference, orderId);
    if (order === undefined) return { order: undefined, assignments: undefined };
    return { order, assignments: await settledAssignments(system, order, settling, VIEW_WAIT_MS) };
  }

  const renderSeats = (
    reply: FastifyReply,
    status: number,
    conference: ConferenceView,
    assignments: AssignmentsView,
    values: Fields | undefined,
    errors: Readonly<Record<string, string>>,
  ) => sendPage(reply, status, assignSeatsPage(conference, assignments, values, errors));

  app.get('/:slug/order/:orderId/seats', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const found = await assignmentsOf(request, reply, conference, ['confirmed', 'reserved']);
    if (found === undefined) return reply;
    const { order, assignments } = found;
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    if (assignments === undefined) return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
    return renderSeats(reply, 200, conference, assignments, undefined, {});
  });

  app.post('/:slug/order/:orderId/seats', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const found = await assignmentsOf(request, reply, conference, ['confirmed']);
    if (found === undefined) return reply;
    const { order, assignments } = found;
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    if (assignments === undefined) return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
    const values = fieldsOf(request.body);
    const { changes, errors } = seatChanges(assignments, values);
    if (Object.keys(errors).length > 0)
      return renderSeats(reply, 400, conference, assignments, values, errors);
    try {
      for (const change of changes) {
        if (change.attendee === null)
          await commands.send('UnassignSeat', { assignmentsId: order.orderId, position: change.position });
        else
          await commands.send('AssignSeat', {
            assignmentsId: order.orderId,
            position: change.position,
            attendee: change.attendee,
          });
      }
    } catch (error) {
      if (error instanceof ValidationError || error instanceof NotFoundError) {
        const message =
          error instanceof ValidationError ? Object.values(error.fields).join(' ') : error.message;
        return renderSeats(reply, 400, conference, assignments, values, {
          [String(changes[0]?.position ?? 0)]: message,
        });
      }
      throw error;
    }
    // Show the registrant what was saved: wait (bounded) for the view to have every change.
    await system.waitFor(async () => {
      const view = await queries.assignments(order.orderId);
      const applied = changes.every((change) => {
        const seat = view?.seats.find((candidate) => candidate.position === change.position);
        return change.attendee === null
          ? seat?.attendee === null
          : seat?.attendee?.email.toLowerCase() === change.attendee.email.toLowerCase();
      });
      return applied ? true : undefined;
    }, VIEW_WAIT_MS);
    return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
  });
}
