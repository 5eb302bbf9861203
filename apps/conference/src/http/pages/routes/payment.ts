/**
 * Payment: start it (V3: wait for the reservation; a partial one goes back to registration, a free order is
 * confirmed at once, else a third-party payment starts) and the simulated processor's page, where the registrant's
 * choice reaches the app by the processor's signed webhook (payment-callbacks.ts); no GET changes anything.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { startOrderPayment } from '../../../app/payments.js';
import type { ConferenceSystem } from '../../../app/system.js';
import { CURRENCY } from '../../../domain/contracts.js';
import { InvalidOperationError } from '../../../domain/errors.js';
import type { ConferenceView } from '../../../read-models/conference-view.js';
import { simulatedProcessor } from '../../payment-callbacks.js';
import { readForm } from '../../schemas/forms.js';
import { siteInputs } from '../../schemas/inputs.js';
import { money } from '../layout.js';
import type { SiteAccess } from '../site-access.js';
import { fieldsOf, isId, seeOther, sendPage, VIEW_WAIT_MS, wholeNumber } from '../support.js';
import { completedOrderPage, paymentUnknownPage, reservationUnknownPage } from '../views/order-status.js';
import { paymentProcessorPage } from '../views/payment.js';
import { messagePage } from '../views/public-page.js';
import { PUBLIC_TEXT } from '../views/public-text.js';
import { confirmationUrl, expiredUrl, registerUrl, registrantUrl, withQuery } from '../views/public-urls.js';
import { conferenceOf, isExpired, waitForOrder } from './public-support.js';

interface PaymentStart {
  readonly orderId: string;
  /** The order's version the registrant saw: the reservation must be newer. */
  readonly orderVersion: number;
  readonly paymentType: string;
}

/** The V3 StartPayment: waits for the reservation, then confirms a free order or starts a third-party payment. */
export async function startPayment(
  system: ConferenceSystem,
  reply: FastifyReply,
  conference: ConferenceView,
  start: PaymentStart,
): Promise<FastifyReply> {
  const { orderId, orderVersion, paymentType } = start;
  const order = await waitForOrder(
    system,
    conference,
    orderId,
    (candidate) => candidate.status !== 'pending' && candidate.version > orderVersion,
  );
  if (order === undefined) return sendPage(reply, 200, reservationUnknownPage(conference, start));
  if (order.status === 'partiallyReserved' || order.status === 'rejected')
    return seeOther(reply, registerUrl(conference, orderId));
  if (order.status === 'confirmed')
    return sendPage(reply, 200, completedOrderPage(conference, order.orderId));
  if (isExpired(order, system.clock.now())) return seeOther(reply, expiredUrl(conference, orderId));
  if (order.isFreeOfCharge) {
    await system.commands.send('ConfirmOrder', { orderId });
    return seeOther(reply, confirmationUrl(conference, orderId));
  }
  if (paymentType !== 'thirdParty')
    return sendPage(
      reply,
      400,
      messagePage(conference, 'Payment', 'The chosen payment method is not supported.'),
    );
  if (system.config.payments === 'off')
    return sendPage(
      reply,
      503,
      messagePage(conference, 'Payment', 'No payment processor is configured: the order cannot be paid.'),
    );
  let paymentId: string;
  try {
    paymentId = await startOrderPayment(system.commands, system.clock, {
      orderId,
      conferenceId: conference.id,
      description: `Registration for ${conference.name}`,
      totalCents: order.totalCents,
      expiresAt: (order.reservationExpiresAt ?? system.clock.now()) + system.config.reservationGraceMs,
    });
  } catch (error) {
    if (!(error instanceof InvalidOperationError)) throw error;
    return sendPage(reply, 409, messagePage(conference, 'Payment', error.message));
  }
  return seeOther(reply, withQuery(`/${conference.slug}/third-party-payment`, { paymentId }));
}

export function paymentRoutes(app: FastifyInstance, system: ConferenceSystem, access: SiteAccess): void {
  const { queries } = system;
  const processor = simulatedProcessor(system);
  const message = (
    reply: FastifyReply,
    status: number,
    conference: ConferenceView | undefined,
    text: string,
  ) => sendPage(reply, status, messagePage(conference, 'Payment', text));

  app.post('/:slug/pay', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    const orderVersion = wholeNumber(values.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (!isId(values.orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'The payment form is not valid.');
    if (!access.hasOrder(request, values.orderId))
      return message(reply, 404, conference, PUBLIC_TEXT.noSuchOrder);
    const paymentType = values.paymentType ?? 'thirdParty';
    return startPayment(system, reply, conference, { orderId: values.orderId, orderVersion, paymentType });
  });

  async function paymentOf(conference: ConferenceView, query: unknown, wait: boolean) {
    const { paymentId } = fieldsOf(query);
    if (!isId(paymentId)) return undefined;
    const find = async () => {
      const payment = await queries.payment(paymentId);
      return payment?.conferenceId === conference.id ? payment : undefined;
    };
    return wait ? system.waitFor(find, VIEW_WAIT_MS) : find();
  }

  app.get('/:slug/third-party-payment', async (request, reply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    if (!isId(fieldsOf(request.query).paymentId))
      return message(reply, 400, conference, 'The payment id is not valid.');
    const payment = await paymentOf(conference, request.query, true);
    if (payment === undefined) return sendPage(reply, 200, paymentUnknownPage(conference));
    if (payment.status === 'completed') return seeOther(reply, confirmationUrl(conference, payment.orderId));
    if (payment.status === 'rejected')
      return seeOther(reply, registrantUrl(conference, payment.orderId, 0, true));
    return seeOther(reply, withQuery('/payment', { paymentId: payment.paymentId }));
  });

  // The simulated third-party payment processor (the Journey's Payments area); none with PAYMENTS=off.
  if (processor === undefined) return;

  /** The payment a processor form names, with its conference, if both exist. */
  async function processorPayment(source: unknown, schema: keyof typeof siteInputs) {
    const { values, problems } = readForm(siteInputs[schema], fieldsOf(source)) as {
      values: { paymentId?: string; outcome?: string };
      problems: object;
    };
    if (Object.keys(problems).length > 0 || values.paymentId === undefined) return 'invalid';
    const payment = await queries.payment(values.paymentId);
    const conference = payment && (await queries.conference(payment.conferenceId));
    return payment && conference ? { payment, conference, outcome: values.outcome } : undefined;
  }

  app.get('/payment', async (request, reply) => {
    const found = await processorPayment(request.query, 'ProcessorPayment');
    if (found === 'invalid') return message(reply, 400, undefined, 'The payment request is not valid.');
    if (found === undefined) return message(reply, 404, undefined, 'The payment could not be found.');
    const { payment } = found;
    return sendPage(
      reply,
      200,
      paymentProcessorPage({
        paymentId: payment.paymentId,
        itemName: payment.description,
        itemAmount: money(payment.totalCents),
      }),
    );
  });

  // The registrant's choice: the processor tells the app by webhook, then sends the registrant on. A payment
  // already settled the other way wins: a refused accept means it was cancelled, a refused reject that it was paid.
  app.post('/payment', async (request, reply) => {
    const found = await processorPayment(request.body, 'ProcessorDecision');
    if (found === 'invalid') return message(reply, 400, undefined, 'The payment request is not valid.');
    if (found === undefined) return message(reply, 404, undefined, 'The payment could not be found.');
    const { payment, conference, outcome } = found;
    const accepted = outcome === 'accepted';
    const status = await processor.decide(
      { paymentId: payment.paymentId, totalCents: payment.totalCents, currency: CURRENCY },
      accepted,
    );
    if (status !== 204 && status !== 409) {
      request.log.error({ status }, 'the payment webhook failed');
      return message(reply, 502, conference, 'The payment processor could not settle the payment.');
    }
    const paid = status === 204 ? accepted : !accepted;
    return seeOther(
      reply,
      paid
        ? confirmationUrl(conference, payment.orderId)
        : registrantUrl(conference, payment.orderId, 0, true),
    );
  });
}
