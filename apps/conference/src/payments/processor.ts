/**
 * The Payments port: a hosted-checkout processor takes the registrant's money on its own pages and tells the app the
 * outcome by a signed webhook (webhook.ts), never by the registrant's browser coming back with a query string.
 */
import { ValidationError } from '../domain/errors.js';

/** What a processor says became of a payment: its webhook's body. */
export interface PaymentOutcome {
  readonly paymentId: string;
  readonly status: 'completed' | 'rejected';
  /** What was taken (completed) or would have been (rejected), in cents of `currency`. */
  readonly amountCents: number;
  readonly currency: string;
}

/** A payment as the processor is asked to take it. */
export interface PaymentToTake {
  readonly paymentId: string;
  readonly totalCents: number;
  readonly currency: string;
}

/** Reads a webhook body; throws ValidationError (400) for anything but a well-formed outcome. */
export function parsePaymentOutcome(body: string): PaymentOutcome {
  const invalid = (field: string) =>
    new ValidationError({ [field]: 'Invalid.' }, 'The payment outcome is not valid.');
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw invalid('body');
  }
  const { paymentId, status, amountCents, currency } = (value ?? {}) as Record<string, unknown>;
  if (typeof paymentId !== 'string' || !/^[0-9a-f-]{36}$/.test(paymentId)) throw invalid('paymentId');
  if (status !== 'completed' && status !== 'rejected') throw invalid('status');
  if (typeof amountCents !== 'number' || !Number.isSafeInteger(amountCents) || amountCents <= 0)
    throw invalid('amountCents');
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw invalid('currency');
  return { paymentId, status, amountCents, currency };
}

/** How the simulated processor calls the app back: posts the body with its signature header; resolves with the status. */
export type DeliverWebhook = (body: string, signature: string) => Promise<number>;
