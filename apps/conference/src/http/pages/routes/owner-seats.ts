/** The owner's seat type routes (list, add, edit, delete while never published) and the orders list. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import {
  type Conference,
  type ConferenceSeatType,
  type SeatTypeFields,
  seatProblems,
} from '../../../domain/conference.js';
import { InvalidOperationError, NotFoundError } from '../../../domain/errors.js';
import { toCents } from '../../../domain/pricing.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { money } from '../layout.js';
import { fieldsOf, isId, type Site, seeOther, sendPage } from '../support.js';
import { ordersPage } from '../views/owner-orders.js';
import { manageUrl, ownerMessagePage } from '../views/owner-page.js';
import { editSeatPage, seatTypesPage } from '../views/owner-seats.js';
import { ownedConferenceOf } from './owner-support.js';

type SeatForm = Readonly<Record<'name' | 'description' | 'quantity' | 'price', string>>;

/** A seat type's fields from a form: quota and price as the owner wrote them, checked by the domain. */
function seatFieldsFrom(values: SeatForm): SeatTypeFields {
  const { quantity: quantityText, price: priceText } = values;
  let priceCents = Number.NaN;
  if (/^\d+(\.\d{1,2})?$/.test(priceText)) {
    try {
      priceCents = toCents(Number(priceText));
    } catch {
      priceCents = Number.NaN;
    }
  }
  return {
    name: values.name,
    description: values.description,
    quantity: /^\d{1,9}$/.test(quantityText) ? Number(quantityText) : Number.NaN,
    priceCents,
  };
}

/** The seat type a form describes, and every problem with it (the schema's and the domain's). */
function readSeatForm(
  schema: typeof apiInputs.NewSeatType | typeof apiInputs.SeatTypeChanges,
  body: unknown,
) {
  const { values, problems } = readForm(schema, fieldsOf(body));
  const seat = seatFieldsFrom(values);
  return { values, seat, errors: { ...seatProblems(seat), ...problems } };
}

function seatOf(conference: Conference, params: unknown): ConferenceSeatType | undefined {
  const { seatTypeId } = fieldsOf(params);
  return isId(seatTypeId) ? conference.seatTypes.find((seat) => seat.seatTypeId === seatTypeId) : undefined;
}

const seatNotFound = (reply: FastifyReply) =>
  sendPage(reply, 404, ownerMessagePage('Not found', 'The seat type could not be found.'));

export function ownerSeatRoutes(app: FastifyInstance, site: Site): void {
  const { management, queries } = site.system;
  const seatsUrl = (conference: Conference) => `${manageUrl(conference)}/seats`;

  app.get('/manage/:slug/seats', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, seatTypesPage(conference, { values: {}, errors: {} }));
  });

  app.post('/manage/:slug/seats', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const { values, seat, errors } = readSeatForm(apiInputs.NewSeatType, request.body);
    if (Object.keys(errors).length > 0)
      return sendPage(reply, 400, seatTypesPage(conference, { values, errors }));
    await management.createSeat(conference.conferenceId, seat);
    return seeOther(reply, seatsUrl(conference));
  });

  app.get('/manage/:slug/seats/:seatTypeId', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return seatNotFound(reply);
    const values = {
      name: seat.name,
      description: seat.description,
      quantity: String(seat.quantity),
      price: money(seat.priceCents),
    };
    return sendPage(reply, 200, editSeatPage(conference, seat, values, {}));
  });

  app.post('/manage/:slug/seats/:seatTypeId', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return seatNotFound(reply);
    const { values, seat: changed, errors } = readSeatForm(apiInputs.SeatTypeChanges, request.body);
    if (Object.keys(errors).length > 0)
      return sendPage(reply, 400, editSeatPage(conference, seat, values, errors));
    await management.updateSeat(conference.conferenceId, seat.seatTypeId, changed);
    return seeOther(reply, seatsUrl(conference));
  });

  app.post('/manage/:slug/seats/:seatTypeId/delete', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return seatNotFound(reply);
    try {
      await management.deleteSeat(conference.conferenceId, seat.seatTypeId);
    } catch (error) {
      if (error instanceof InvalidOperationError || error instanceof NotFoundError)
        return sendPage(
          reply,
          409,
          seatTypesPage(conference, { values: {}, errors: {}, error: error.message }),
        );
      throw error;
    }
    return seeOther(reply, seatsUrl(conference));
  });

  app.get('/manage/:slug/orders', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const orders = await queries.ordersOfConference(conference.conferenceId);
    const rows = await Promise.all(
      orders.map(async (order) => ({ order, assignments: await queries.assignments(order.orderId) })),
    );
    return sendPage(reply, 200, ordersPage(conference, rows));
  });
}
