/**
 * After the order: the thank-you page, the expired page, finding an order (which hands its token to the browser),
 * and the order's details (with the order's token only).
 */
import type { FastifyInstance } from 'fastify';
import { settledAssignments } from '../../../app/queries.js';
import { addRateLimitFields } from '../../limits/rate-limit-fields.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { fieldsOf, isId, type Site, seeOther, sendPage, VIEW_WAIT_MS } from '../support.js';
import { confirmationPage, findOrderPage, orderDetailsPage } from '../views/order.js';
import { expiredPage } from '../views/order-status.js';
import { messagePage } from '../views/public-page.js';
import { PUBLIC_TEXT } from '../views/public-text.js';
import { conferenceOf, mayOpenOrder, orderOf, waitForOrder } from './public-support.js';

export function orderRoutes(app: FastifyInstance, site: Site): void {
  const { system, access, limits } = site;

  app.get('/:slug/confirmation', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const { orderId } = fieldsOf(request.query);
    if (!isId(orderId))
      return sendPage(reply, 400, messagePage(conference, 'Registration', 'The order id is not valid.'));
    if (!mayOpenOrder(site, request, reply, conference, orderId)) return reply;
    // The payment confirms the order through the process manager: give it the usual moment.
    const order =
      (await waitForOrder(system, conference, orderId, (candidate) => candidate.status === 'confirmed')) ??
      (await orderOf(system, conference, orderId));
    if (order === undefined)
      return sendPage(reply, 404, messagePage(conference, 'Registration', 'The order could not be found.'));
    return sendPage(reply, 200, confirmationPage(conference, order));
  });

  app.get('/:slug/expired', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, expiredPage(conference));
  });

  app.get('/:slug/order/find', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, findOrderPage(conference, {}));
  });

  app.post('/:slug/order/find', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    addRateLimitFields(reply, await limits.charge('orderLookup', request.ip));
    const { values, problems } = readForm(apiInputs.FindOrderQuery, fieldsOf(request.body));
    const { email, accessCode: code } = values;
    const problem = Object.values(problems)[0];
    if (problem !== undefined) return sendPage(reply, 400, findOrderPage(conference, values, problem));
    if (email === '' || code === '')
      return sendPage(
        reply,
        400,
        findOrderPage(conference, values, 'Enter the e-mail address and the order code.'),
      );
    const order = await limits.checkCode(`order ${email}`, request.ip, async () => {
      const found = await system.queries.findOrder(email, code);
      return found?.conferenceId === conference.id ? found : undefined;
    });
    if (order === undefined)
      return sendPage(reply, 200, findOrderPage(conference, values, PUBLIC_TEXT.orderNotFound));
    access.grantOrder(request, reply, conference.slug, order.orderId);
    return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
  });

  app.get('/:slug/order/:orderId', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const { orderId } = fieldsOf(request.params);
    if (!isId(orderId)) return seeOther(reply, `/${conference.slug}/order/find`);
    if (!mayOpenOrder(site, request, reply, conference, orderId)) return reply;
    const order = await orderOf(system, conference, orderId);
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    const assignments = await settledAssignments(system, order, ['confirmed'], VIEW_WAIT_MS);
    return sendPage(reply, 200, orderDetailsPage(conference, order, assignments));
  });
}
