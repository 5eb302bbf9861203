/**
 * Checkout: the registrant's details and the payment method (GET the form, POST it: AssignRegistrantDetails, then
 * start the payment). V3: checkout waits only for the order to be priced; starting the payment waits for the
 * reservation.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { InvalidOperationError, NotFoundError, ValidationError } from '../../../domain/errors.js';
import { personalInfoProblems } from '../../../domain/personal-info.js';
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { OrderView } from '../../../read-models/order-view.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { type Fields, fieldsOf, isId, type Site, seeOther, sendPage, wholeNumber } from '../support.js';
import { type CheckoutForm, checkoutPage } from '../views/checkout.js';
import { completedOrderPage, orderUnknownPage } from '../views/order-status.js';
import { messagePage } from '../views/public-page.js';
import { PUBLIC_TEXT } from '../views/public-text.js';
import { expiredUrl, registrantUrl } from '../views/public-urls.js';
import { startPayment } from './payment.js';
import { conferenceOf, holdOf, isExpired, mayOpenOrder, waitForOrder } from './public-support.js';

/** The registrant of the form, and every problem with it: the schema's, the domain's, the e-mail confirmation. */
function readRegistrant(values: Fields) {
  const { values: registrant, problems } = readForm(apiInputs.PersonalInfo, values);
  const errors: Record<string, string> = { ...personalInfoProblems(registrant), ...problems };
  const confirm = (values.confirmEmail ?? '').trim();
  if (confirm === '') errors.confirmEmail = PUBLIC_TEXT.confirmEmail;
  else if (registrant.email !== '' && confirm.toLowerCase() !== registrant.email.toLowerCase())
    errors.confirmEmail = PUBLIC_TEXT.emailsDiffer;
  return { registrant, errors };
}

export function checkoutRoutes(app: FastifyInstance, site: Site): void {
  const { system } = site;
  const { commands, clock } = system;

  const renderCheckout = (
    reply: FastifyReply,
    status: number,
    conference: ConferenceView,
    order: OrderView,
    form: CheckoutForm,
  ) => sendPage(reply, status, checkoutPage(conference, order, holdOf(order, clock.now()), form));

  /** The order to check out: priced past `orderVersion`, not confirmed, not expired (else the page is sent). */
  async function checkoutOrder(
    reply: FastifyReply,
    conference: ConferenceView,
    orderId: string,
    orderVersion: number,
  ): Promise<OrderView | undefined> {
    const order = await waitForOrder(
      system,
      conference,
      orderId,
      (candidate) => candidate.version > orderVersion,
    );
    if (order === undefined) {
      sendPage(reply, 200, orderUnknownPage(conference, registrantUrl(conference, orderId, orderVersion)));
      return undefined;
    }
    if (order.reservationExpiresAt === null) {
      sendPage(reply, 200, completedOrderPage(conference, order.orderId));
      return undefined;
    }
    if (isExpired(order, clock.now())) {
      seeOther(reply, expiredUrl(conference, orderId));
      return undefined;
    }
    return order;
  }

  app.get('/:slug/registrant', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const query = fieldsOf(request.query);
    const orderVersion = wholeNumber(query.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (!isId(query.orderId) || orderVersion === undefined)
      return sendPage(reply, 400, messagePage(conference, 'Registration', 'The order id is not valid.'));
    if (!mayOpenOrder(site, request, reply, conference, query.orderId)) return reply;
    const order = await checkoutOrder(reply, conference, query.orderId, orderVersion);
    if (order === undefined) return reply;
    const notice = query.paymentRejected === undefined ? undefined : PUBLIC_TEXT.paymentRejected;
    return renderCheckout(reply, 200, conference, order, {
      values: {},
      errors: {},
      ...(notice ? { notice } : {}),
    });
  });

  app.post('/:slug/registrant', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    const orderVersion = wholeNumber(values.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    const orderId = values.orderId;
    if (!isId(orderId) || orderVersion === undefined)
      return sendPage(
        reply,
        400,
        messagePage(conference, 'Registration', 'The registrant form is not valid.'),
      );
    if (!mayOpenOrder(site, request, reply, conference, orderId)) return reply;
    const { registrant, errors } = readRegistrant(values);
    if (Object.keys(errors).length > 0) {
      const order = await checkoutOrder(reply, conference, orderId, -1);
      return order === undefined ? reply : renderCheckout(reply, 400, conference, order, { values, errors });
    }
    try {
      await commands.send('AssignRegistrantDetails', { orderId, ...registrant });
    } catch (error) {
      if (
        error instanceof NotFoundError ||
        error instanceof InvalidOperationError ||
        error instanceof ValidationError
      ) {
        const order = await checkoutOrder(reply, conference, orderId, -1);
        if (order === undefined) return reply;
        const fieldErrors = error instanceof ValidationError ? error.fields : {};
        return renderCheckout(reply, 400, conference, order, {
          values,
          errors: fieldErrors,
          notice: error.message,
        });
      }
      throw error;
    }
    return startPayment(system, reply, conference, {
      orderId,
      orderVersion,
      paymentType: values.paymentType ?? 'thirdParty',
    });
  });
}
