/**
 * The ThirdPartyProcessorPayment aggregate of the Payments context (stream `payment-<paymentId>`) as a decider. The
 * Journey stores it as a row; here it is event-sourced from its own events. It records what the processor took,
 * and a refund owed when a completed payment paid for nothing. Every command is safe to redeliver: repeating one
 * that already took effect appends nothing.
 */
import type { Decider } from '@stratus/eventsourcing';
import { type CommandData, CURRENCY, type PaymentEvent } from './contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from './errors.js';

export type PaymentCommand =
  | {
      readonly type: 'InitiateThirdPartyProcessorPayment';
      readonly data: CommandData['InitiateThirdPartyProcessorPayment'];
    }
  | {
      readonly type: 'CompleteThirdPartyProcessorPayment';
      readonly data: CommandData['CompleteThirdPartyProcessorPayment'] & { readonly now?: number };
    }
  | {
      readonly type: 'CancelThirdPartyProcessorPayment';
      readonly data: CommandData['CancelThirdPartyProcessorPayment'];
    }
  | {
      readonly type: 'RefundThirdPartyProcessorPayment';
      readonly data: CommandData['RefundThirdPartyProcessorPayment'];
    };

/** `New`: not initiated, so the payment does not exist. The Journey's Accepted state is never used, so absent. */
export type PaymentStatus = 'New' | 'Initiated' | 'Completed' | 'Rejected';

type PaymentDetails = Extract<PaymentEvent, { type: 'PaymentInitiated' }>['data'];

export interface PaymentState extends PaymentDetails {
  readonly status: PaymentStatus;
  readonly currency: string;
  /** What the processor took, once completed. */
  readonly paidCents: number;
  readonly refundDue: boolean;
}

export const paymentDecider: Decider<PaymentState, PaymentEvent, PaymentCommand> = {
  initialState: () => ({
    status: 'New',
    paymentId: '',
    paymentSourceId: '',
    conferenceId: '',
    description: '',
    totalCents: 0,
    currency: CURRENCY,
    paidCents: 0,
    refundDue: false,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'PaymentInitiated':
        return { ...state, ...event.data, currency: event.data.currency ?? CURRENCY, status: 'Initiated' };
      case 'PaymentCompleted':
        return {
          ...state,
          status: 'Completed',
          paidCents: event.data.amountCents ?? state.totalCents,
          currency: event.data.currency ?? state.currency,
        };
      case 'PaymentRejected':
        return { ...state, status: 'Rejected' };
      case 'PaymentRefundDue':
        return { ...state, refundDue: true };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'InitiateThirdPartyProcessorPayment':
        return initiate(command.data, state);
      case 'CompleteThirdPartyProcessorPayment':
        return complete(existing(state, command.data.paymentId), command.data);
      case 'CancelThirdPartyProcessorPayment':
        return cancel(existing(state, command.data.paymentId));
      case 'RefundThirdPartyProcessorPayment':
        return refund(existing(state, command.data.paymentId), command.data.reason);
    }
  },
};

function initiate(details: PaymentDetails, state: PaymentState): PaymentEvent[] {
  const { paymentId, paymentSourceId, conferenceId, description, totalCents, currency = CURRENCY } = details;
  assertCents('totalCents', totalCents);
  const data = {
    paymentId,
    paymentSourceId,
    conferenceId,
    description,
    totalCents,
    currency,
    ...(details.expiresAt === undefined ? {} : { expiresAt: details.expiresAt }),
  };
  if (state.status === 'New') return [{ type: 'PaymentInitiated', data }];
  const same = (Object.keys(data) as (keyof typeof data)[]).every((key) => data[key] === state[key]);
  if (same) return [];
  throw new InvalidOperationError('The payment was already initiated with other details.');
}

/**
 * Records what the processor took; whether it pays for the order is the registration process's to decide, but one
 * that completes after the order could take it is owed back at once (the process may be over by then).
 */
function complete(state: PaymentState, paid: Data<'CompleteThirdPartyProcessorPayment'>): PaymentEvent[] {
  if (state.status === 'Completed') return [];
  if (state.status === 'Rejected') throw new InvalidOperationError('Cannot complete a rejected payment.');
  const { amountCents = state.totalCents, currency = state.currency } = paid;
  assertCents('amountCents', amountCents);
  const { paymentId, paymentSourceId } = state;
  const data = { paymentId, paymentSourceId, amountCents, currency };
  if (state.expiresAt === undefined || paid.now === undefined || paid.now <= state.expiresAt)
    return [{ type: 'PaymentCompleted', data }];
  const reason = 'The payment came after the order could take it.';
  // Said on the completion too: the process may not have seen the order's expiry yet, and must not confirm it.
  return [
    { type: 'PaymentCompleted', data: { ...data, late: true } },
    { type: 'PaymentRefundDue', data: { paymentId, paymentSourceId, amountCents, currency, reason } },
  ];
}

type Data<Type extends PaymentCommand['type']> = Extract<PaymentCommand, { type: Type }>['data'];

/** Owes a completed payment back, once; a payment that took nothing owes nothing. */
function refund(state: PaymentState, reason: string): PaymentEvent[] {
  if (state.status !== 'Completed' || state.refundDue) return [];
  const { paymentId, paymentSourceId, paidCents: amountCents, currency } = state;
  return [{ type: 'PaymentRefundDue', data: { paymentId, paymentSourceId, amountCents, currency, reason } }];
}

function assertCents(field: string, cents: number): void {
  if (!Number.isSafeInteger(cents) || cents <= 0) {
    const message = `The ${field === 'totalCents' ? 'total' : 'amount'} must be a positive whole number of cents.`;
    throw new ValidationError({ [field]: message }, message);
  }
}

function cancel(state: PaymentState): PaymentEvent[] {
  if (state.status === 'Rejected') return [];
  if (state.status === 'Completed') throw new InvalidOperationError('Cannot cancel a completed payment.');
  return [
    { type: 'PaymentRejected', data: { paymentId: state.paymentId, paymentSourceId: state.paymentSourceId } },
  ];
}

/** The Journey's handler only logs a Complete or Cancel of an unknown payment: the caller can catch this and log. */
function existing(state: PaymentState, paymentId: string): PaymentState {
  if (state.status === 'New') throw new NotFoundError('Payment', paymentId);
  return state;
}
