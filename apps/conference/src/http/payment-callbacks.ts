/**
 * The app's end of the Payments port: the webhook a processor calls with the outcome of a payment (signed, see
 * src/payments/webhook.ts), and the simulated processor wired to call it through the same HTTP pipeline.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { parsePaymentOutcome } from '../payments/processor.js';
import { SimulatedPaymentProcessor } from '../payments/simulated-processor.js';
import { SIGNATURE_HEADER, verifyWebhook, WebhookSignatureError } from '../payments/webhook.js';
import { HttpError } from './api/errors.js';
import type { AbuseLimits } from './limits/abuse-limits.js';

export const WEBHOOK_PATH = '/api/payments/webhook';

/** Registers the webhook (none runs with PAYMENTS=off). Its body is read as text: the signature is over the bytes. */
export async function paymentWebhookRoute(
  app: FastifyInstance,
  system: ConferenceSystem,
  limits: AbuseLimits,
): Promise<void> {
  if (system.config.payments === 'off') return;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: 16_384 },
    (_request, body, done) => done(null, body),
  );
  app.post(WEBHOOK_PATH, async (request, reply) => {
    const body = typeof request.body === 'string' ? request.body : '';
    try {
      await limits.verifySignature(request.ip, () =>
        verifyWebhook(
          system.config.paymentsWebhookSecret,
          request.headers[SIGNATURE_HEADER],
          body,
          system.clock.now(),
        ),
      );
    } catch (error) {
      if (error instanceof WebhookSignatureError) throw new HttpError(401, error.message);
      throw error;
    }
    const outcome = parsePaymentOutcome(body);
    const { paymentId, amountCents, currency } = outcome;
    if (outcome.status === 'completed')
      await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId, amountCents, currency });
    else await system.commands.send('CancelThirdPartyProcessorPayment', { paymentId });
    return reply.code(204).send();
  });
}

/** The simulated processor, calling the app's webhook in process (undefined unless PAYMENTS=simulated). */
export function simulatedProcessor(
  system: ConferenceSystem,
  app: FastifyInstance,
): SimulatedPaymentProcessor | undefined {
  if (system.config.payments !== 'simulated') return undefined;
  return new SimulatedPaymentProcessor(
    system.config.paymentsWebhookSecret,
    system.clock,
    async (body, signature) => {
      const answer = await app.inject({
        method: 'POST',
        url: WEBHOOK_PATH,
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
        payload: body,
      });
      return answer.statusCode;
    },
  );
}
