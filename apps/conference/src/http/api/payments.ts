/** Paying for a reserved order (or confirming a free one at once), and the simulated processor's verdicts. */
import { startOrderPayment } from '../../app/payments.js';
import type { ConferenceSystem } from '../../app/system.js';
import { InvalidOperationError } from '../../domain/errors.js';
import type { OrderView } from '../../read-models/order-view.js';
import { assertOpen, existingOrder, type Handlers, settle, uuidParam } from './support.js';

type PaymentHandlers = Pick<Handlers, 'startPayment' | 'acceptPayment' | 'rejectPayment'>;

export function paymentHandlers(system: ConferenceSystem): PaymentHandlers {
  const { queries, commands, clock } = system;
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
      const conference = await queries.conference(order.conferenceId);
      const paymentId = await startOrderPayment(commands, clock, {
        orderId,
        conferenceId: order.conferenceId,
        description: `Registration for ${conference?.name ?? order.conferenceId}`,
        totalCents: order.totalCents,
        expiresAt: (order.reservationExpiresAt ?? clock.now()) + system.config.reservationGraceMs,
      });
      return reply.code(201).send({ paymentId });
    },

    async acceptPayment(request, reply) {
      const paymentId = uuidParam(request, 'paymentId', 'Payment');
      await commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
      return reply.code(204).send();
    },

    async rejectPayment(request, reply) {
      const paymentId = uuidParam(request, 'paymentId', 'Payment');
      await commands.send('CancelThirdPartyProcessorPayment', { paymentId });
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
