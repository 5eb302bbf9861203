/**
 * Registration: choose seats (GET the form, POST it: RegisterToConference, then on to checkout). A new order's id is
 * the server's: the form carries it with its token, which posting it hands to the browser (site-access.ts); an
 * existing order can be changed with its token only.
 */
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { MAX_SEATS_PER_TYPE } from '../../../domain/contracts.js';
import { InvalidOperationError, ValidationError } from '../../../domain/errors.js';
import type { ConferenceView, SeatTypeView } from '../../../read-models/conference-view.js';
import type { OrderView } from '../../../read-models/order-view.js';
import { addRateLimitFields } from '../../limits/rate-limit-fields.js';
import { readForm } from '../../schemas/forms.js';
import { siteInputs } from '../../schemas/inputs.js';
import { fieldsOf, isId, type Site, seeOther, sendPage, wholeNumber } from '../support.js';
import { completedOrderPage, orderUnknownPage } from '../views/order-status.js';
import { messagePage } from '../views/public-page.js';
import { PUBLIC_TEXT } from '../views/public-text.js';
import { expiredUrl, registerUrl, registrantUrl } from '../views/public-urls.js';
import { type RegisterForm, type RegisterLine, registerPage } from '../views/registration.js';
import { conferenceOf, holdOf, isExpired, mayOpenOrder, orderOf, waitForOrder } from './public-support.js';

function registerLines(seatTypes: readonly SeatTypeView[], draft: OrderView | undefined): RegisterLine[] {
  return seatTypes.map((seat) => {
    const line = draft?.lines.find((candidate) => candidate.seatTypeId === seat.id);
    const held = draft !== undefined && draft.status !== 'pending' ? (line?.reserved ?? 0) : 0;
    const available = Math.max(seat.available, 0) + held;
    const max = Math.max(Math.min(available, MAX_SEATS_PER_TYPE), 0);
    const partial = draft !== undefined && line !== undefined && line.requested > line.reserved;
    const selected = draft === undefined || line === undefined ? 0 : Math.min(held, max);
    return { seat, available, max, selected, partial };
  });
}

export function registrationRoutes(app: FastifyInstance, site: Site): void {
  const { system, access, limits } = site;
  const { queries, commands, clock } = system;

  function renderRegister(
    reply: FastifyReply,
    status: number,
    conference: ConferenceView,
    form: RegisterForm,
    draft: OrderView | undefined,
  ) {
    const hold = draft === undefined ? undefined : holdOf(draft, clock.now());
    return sendPage(reply, status, registerPage(conference, form, hold));
  }
  const message = (reply: FastifyReply, status: number, conference: ConferenceView, text: string) =>
    sendPage(reply, status, messagePage(conference, 'Registration', text));

  app.get('/:slug/register', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    if (!conference.isPublished) return message(reply, 404, conference, PUBLIC_TEXT.notOpen);
    const { orderId } = fieldsOf(request.query);
    const seatTypes = await queries.seatTypes(conference.id);
    if (orderId === undefined) {
      const newOrderId = uuidv7(clock.now());
      const form = {
        orderId: newOrderId,
        orderToken: access.orderToken(newOrderId),
        orderVersion: 0,
        lines: registerLines(seatTypes, undefined),
      };
      return renderRegister(reply, 200, conference, { ...form, errors: [] }, undefined);
    }
    if (!isId(orderId)) return message(reply, 400, conference, 'The order id is not valid.');
    if (!mayOpenOrder(site, request, reply, conference, orderId)) return reply;
    const draft = await waitForOrder(system, conference, orderId, (order) => order.status !== 'pending');
    if (draft === undefined)
      return sendPage(reply, 200, orderUnknownPage(conference, registerUrl(conference, orderId)));
    if (draft.status === 'confirmed')
      return sendPage(reply, 200, completedOrderPage(conference, draft.orderId));
    if (isExpired(draft, clock.now())) return seeOther(reply, expiredUrl(conference, orderId));
    const form = { orderId, orderVersion: draft.version, lines: registerLines(seatTypes, draft), errors: [] };
    return renderRegister(reply, 200, conference, form, draft);
  });

  app.post('/:slug/register', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    if (!conference.isPublished) return message(reply, 404, conference, PUBLIC_TEXT.notOpen);
    const body = fieldsOf(request.body);
    const { values, problems } = readForm(siteInputs.OrderForm, body);
    const { orderId } = values;
    const orderVersion = wholeNumber(body.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (Object.keys(problems).length > 0 || !isId(orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'The registration form is not valid.');
    // The token of a new order comes with the form, an existing order's with the browser.
    const orderToken = [access.orderTokenOf(request, orderId), values.orderToken].find((token) =>
      access.isOrderToken(orderId, token),
    );
    if (orderToken === undefined) return message(reply, 404, conference, PUBLIC_TEXT.noSuchOrder);
    const draft = orderVersion > 0 ? await orderOf(system, conference, orderId) : undefined;
    if (draft !== undefined && isExpired(draft, clock.now()))
      return seeOther(reply, expiredUrl(conference, orderId));
    const lines = registerLines(await queries.seatTypes(conference.id), draft);
    for (const line of lines) line.partial = false;
    const errors: string[] = [];
    let badInput = false;
    let adjusted = false;
    for (const [key, value] of Object.entries(body)) {
      if (!key.startsWith('q_')) continue;
      const line = lines.find((candidate) => candidate.seat.id === key.slice(2));
      const quantity = wholeNumber(value, 0, MAX_SEATS_PER_TYPE);
      if (line === undefined) {
        if (quantity !== 0 && !errors.includes(PUBLIC_TEXT.seatTypeGone))
          errors.push(PUBLIC_TEXT.seatTypeGone);
        adjusted ||= quantity !== 0;
      } else if (quantity === undefined) {
        if (!errors.includes(PUBLIC_TEXT.badQuantity)) errors.push(PUBLIC_TEXT.badQuantity);
        badInput = true;
      } else if (quantity > line.max) {
        line.partial = true;
        line.selected = line.max;
        adjusted = true;
      } else {
        line.selected = quantity;
      }
    }
    const form = { orderId, ...(draft === undefined ? { orderToken } : {}), orderVersion, lines, errors };
    if (badInput) return renderRegister(reply, 400, conference, form, draft);
    if (adjusted) return renderRegister(reply, 200, conference, form, draft);
    if (!lines.some((line) => line.selected > 0)) {
      errors.push(PUBLIC_TEXT.itemsRequired);
      return renderRegister(reply, 400, conference, form, draft);
    }
    const seats = lines.reduce((sum, line) => sum + line.selected, 0);
    if (draft === undefined) {
      addRateLimitFields(reply, await limits.charge('orders', request.ip));
      await limits.hold(conference.id, request.ip, 1, seats);
    } else {
      const held = draft.lines.reduce((sum, line) => sum + line.requested, 0);
      await limits.hold(conference.id, request.ip, 0, seats - held);
    }
    try {
      await commands.send('RegisterToConference', {
        orderId,
        conferenceId: conference.id,
        seats: lines.map((line) => ({ seatTypeId: line.seat.id, quantity: line.selected })),
      });
    } catch (error) {
      if (error instanceof ValidationError) {
        errors.push(error.message);
        return renderRegister(reply, 400, conference, form, draft);
      }
      if (error instanceof InvalidOperationError)
        return message(reply, 409, conference, `The order can no longer be changed. ${error.message}`);
      throw error;
    }
    access.grantOrder(request, reply, conference.slug, orderId);
    return seeOther(reply, registrantUrl(conference, orderId, draft?.version ?? 0));
  });
}
