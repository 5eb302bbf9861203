/**
 * The app's end of the Payments port: the webhook a processor calls with the outcome of a payment (signed, see
 * src/payments/webhook.ts), and the simulated processor wired to its checks and handling.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { parsePaymentOutcome } from '../payments/processor.js';
import { SimulatedPaymentProcessor } from '../payments/simulated-processor.js';
import { SIGNATURE_HEADER, verifyWebhook, WebhookSignatureError } from '../payments/webhook.js';
import { errorResponse, HttpError } from './api/errors.js';
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
    await limits.verifySignature(request.ip, () =>
      verifySigned(system, body, request.headers[SIGNATURE_HEADER]),
    );
    await settlePayment(system, body);
    return reply.code(204).send();
  });
}

/** Throws HttpError 401 unless `signature` signs `body` under the webhook secret, within the replay window. */
function verifySigned(
  system: ConferenceSystem,
  body: string,
  signature: string | string[] | undefined,
): void {
  try {
    verifyWebhook(system.config.paymentsWebhookSecret, signature, body, system.clock.now());
  } catch (error) {
    if (error instanceof WebhookSignatureError) throw new HttpError(401, error.message);
    throw error;
  }
}

/** Records the outcome a verified webhook body reports (ValidationError when it is malformed). */
async function settlePayment(system: ConferenceSystem, body: string): Promise<void> {
  const outcome = parsePaymentOutcome(body);
  const { paymentId, amountCents, currency } = outcome;
  if (outcome.status === 'completed')
    await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId, amountCents, currency });
  else await system.commands.send('CancelThirdPartyProcessorPayment', { paymentId });
}

/**
 * The simulated processor (undefined unless PAYMENTS=simulated). It calls the webhook's own checks and handling in
 * process, its answer the status the route would give: the signature is made and verified as over HTTP, without the
 * cost of a simulated request (a tenth of the web's work per order).
 */
export function simulatedProcessor(system: ConferenceSystem): SimulatedPaymentProcessor | undefined {
  if (system.config.payments !== 'simulated') return undefined;
  return new SimulatedPaymentProcessor(
    system.config.paymentsWebhookSecret,
    system.clock,
    async (body, signature) => {
      try {
        verifySigned(system, body, signature);
        await settlePayment(system, body);
        return 204;
      } catch (error) {
        const { status } = errorResponse(error);
        if (status >= 500) throw error;
        return status;
      }
    },
  );
}
