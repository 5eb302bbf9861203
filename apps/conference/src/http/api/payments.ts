/**
 * Paying for a reserved order (or confirming a free one at once), and the registrant's choice at the simulated
 * processor, which tells the app by its signed webhook (payment-callbacks.ts).
 */
import type { FastifyRequest } from 'fastify';
import { startOrderPayment } from '../../app/payments.js';
import type { ConferenceSystem } from '../../app/system.js';
import { InvalidOperationError, NotFoundError } from '../../domain/errors.js';
import type { SimulatedPaymentProcessor } from '../../payments/simulated-processor.js';
import type { OrderView } from '../../read-models/order-view.js';
import { BackendUnavailableError } from '../backend-unavailable.js';
import { HttpError } from './errors.js';
import { assertOpen, existingOrder, type Handlers, settle, uuidParam } from './support.js';

type PaymentHandlers = Pick<Handlers, 'startPayment' | 'acceptPayment' | 'rejectPayment'>;

export function paymentHandlers(
  system: ConferenceSystem,
  processor: SimulatedPaymentProcessor | undefined,
): PaymentHandlers {
  const { queries, commands, clock } = system;
  /** The registrant's choice at the simulated processor; answers as the app answered its webhook. */
  async function decide(request: FastifyRequest, accepted: boolean): Promise<void> {
    if (processor === undefined)
      throw new HttpError(404, 'No simulated payment processor runs here (PAYMENTS=off).');
    const paymentId = uuidParam(request, 'paymentId', 'Payment');
    const payment = await system.payment(paymentId);
    if (payment === undefined) throw new NotFoundError('Payment', paymentId);
    const status = await processor.decide(
      { paymentId, totalCents: payment.totalCents, currency: payment.currency },
      accepted,
    );
    if (status === 409)
      throw new InvalidOperationError(`The payment was already ${accepted ? 'rejected' : 'completed'}.`);
    // The webhook could not reach the database: as much out of reach for the registrant.
    if (status === 503) throw new BackendUnavailableError();
    if (status !== 204) throw new HttpError(status, 'The payment processor could not settle the payment.');
  }
  return {
    async startPayment(request, reply) {
      const orderId = uuidParam(request, 'orderId', 'Order');
      const order = await existingOrder(system, orderId);
      assertOpen(order, clock.now());
      if (order.status !== 'reserved') throw new InvalidOperationError(notPayable(order.status));
      if (order.isFreeOfCharge || order.totalCents === 0) {
        await commands.send('ConfirmOrder', { orderId });
        await settle(system, async () => (await queries.order(orderId))?.status === 'confirmed');
        return reply.code(200).send({ status: 'confirmed' });
      }
      if (system.config.payments === 'off')
        throw new HttpError(
          503,
          'No payment processor is configured (PAYMENTS=off): the order cannot be paid.',
        );
      const conference = await queries.conference(order.conferenceId);
      const paymentId = await startOrderPayment(commands, clock, {
        orderId,
        conferenceId: order.conferenceId,
        description: `Registration for ${conference?.name ?? order.conferenceId}`,
        totalCents: order.totalCents,
        expiresAt: (order.reservationExpiresAt ?? clock.now()) + system.config.reservationGraceMs,
      });
      // The processor reads the payment from its stream (system.payment), so the registrant's next call finds it
      // without waiting for the payments view.
      return reply.code(201).send({ paymentId });
    },

    async acceptPayment(request, reply) {
      await decide(request, true);
      return reply.code(204).send();
    },

    async rejectPayment(request, reply) {
      await decide(request, false);
      return reply.code(204).send();
    },
  };
}

function notPayable(status: OrderView['status']): string {
  switch (status) {
    case 'pending':
      return 'The seats of this order are not reserved yet.';
    case 'partiallyReserved':
      return 'Only some of the requested seats could be reserved: change the seats of the order first.';
    case 'rejected':
      return 'No seats could be reserved for this order.';
    default:
      return `The order cannot be paid (${status}).`;
  }
}
