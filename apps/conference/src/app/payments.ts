import { type Clock, uuidv7 } from '@stratus/core';
import type { CommandBus } from '@stratus/eventsourcing';
import { CURRENCY } from '../domain/contracts.js';

export interface OrderPayment {
  readonly orderId: string;
  readonly conferenceId: string;
  readonly description: string;
  readonly totalCents: number;
  /** When the order can no longer take a payment: its reservation's end plus the grace period. */
  readonly expiresAt: number;
}

/**
 * Starts a third-party payment of an order's total; resolves with its id. The order first fixes its seats (and so
 * its total) for this payment, and refuses (InvalidOperationError) when it cannot be paid now.
 */
export async function startOrderPayment(
  commands: CommandBus,
  clock: Clock,
  payment: OrderPayment,
): Promise<string> {
  const { orderId, conferenceId, description, totalCents, expiresAt } = payment;
  const paymentId = uuidv7(clock.now());
  await commands.send('StartOrderPayment', { orderId, paymentId });
  await commands.send('InitiateThirdPartyProcessorPayment', {
    paymentId,
    paymentSourceId: orderId,
    conferenceId,
    description,
    totalCents,
    currency: CURRENCY,
    expiresAt,
  });
  return paymentId;
}
