import type { Clock } from '@stratus/core';
import type { DeliverWebhook, PaymentOutcome, PaymentToTake } from './processor.js';
import { signWebhook } from './webhook.js';

/**
 * The CQRS Journey's simulated third-party processor: the registrant accepts or refuses their own payment on its
 * page, and it calls the app back as a real one would, by a signed webhook. For demos and tests only (PAYMENTS).
 */
export class SimulatedPaymentProcessor {
  readonly #secret: string;
  readonly #clock: Clock;
  readonly #deliver: DeliverWebhook;

  constructor(secret: string, clock: Clock, deliver: DeliverWebhook) {
    this.#secret = secret;
    this.#clock = clock;
    this.#deliver = deliver;
  }

  /** The registrant's choice at the processor: the app hears it by webhook; resolves with the app's answer (status). */
  decide(payment: PaymentToTake, accepted: boolean): Promise<number> {
    const outcome: PaymentOutcome = {
      paymentId: payment.paymentId,
      status: accepted ? 'completed' : 'rejected',
      amountCents: payment.totalCents,
      currency: payment.currency,
    };
    const body = JSON.stringify(outcome);
    return this.#deliver(body, signWebhook(this.#secret, body, this.#clock.now()));
  }
}
