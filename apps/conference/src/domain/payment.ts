/**
 * The ThirdPartyProcessorPayment aggregate of the Payments context (stream `payment-<paymentId>`) as a decider. The
 * Journey stores it as a row; here it is event-sourced from its own three events. Every command is safe to
 * redeliver: repeating one that already took effect appends nothing.
 */
import type { Decider } from '@stratus/eventsourcing';
import type { CommandData, PaymentEvent } from './contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from './errors.js';

export type PaymentCommand =
  | {
      readonly type: 'InitiateThirdPartyProcessorPayment';
      readonly data: CommandData['InitiateThirdPartyProcessorPayment'];
    }
  | {
      readonly type: 'CompleteThirdPartyProcessorPayment';
      readonly data: CommandData['CompleteThirdPartyProcessorPayment'];
    }
  | {
      readonly type: 'CancelThirdPartyProcessorPayment';
      readonly data: CommandData['CancelThirdPartyProcessorPayment'];
    };

/** `New`: not initiated, so the payment does not exist. The Journey's Accepted state is never used, so absent. */
export type PaymentStatus = 'New' | 'Initiated' | 'Completed' | 'Rejected';

type PaymentDetails = Extract<PaymentEvent, { type: 'PaymentInitiated' }>['data'];

export interface PaymentState extends PaymentDetails {
  readonly status: PaymentStatus;
}

export const paymentDecider: Decider<PaymentState, PaymentEvent, PaymentCommand> = {
  initialState: () => ({
    status: 'New',
    paymentId: '',
    paymentSourceId: '',
    conferenceId: '',
    description: '',
    totalCents: 0,
  }),

  evolve(state, event) {
    switch (event.type) {
      case 'PaymentInitiated':
        return { ...event.data, status: 'Initiated' };
      case 'PaymentCompleted':
        return { ...state, status: 'Completed' };
      case 'PaymentRejected':
        return { ...state, status: 'Rejected' };
    }
  },

  decide(command, state) {
    switch (command.type) {
      case 'InitiateThirdPartyProcessorPayment':
        return initiate(command.data, state);
      case 'CompleteThirdPartyProcessorPayment':
        return complete(existing(state, command.data.paymentId));
      case 'CancelThirdPartyProcessorPayment':
        return cancel(existing(state, command.data.paymentId));
    }
  },
};

function initiate(details: PaymentDetails, state: PaymentState): PaymentEvent[] {
  const { paymentId, paymentSourceId, conferenceId, description, totalCents } = details;
  if (!Number.isSafeInteger(totalCents) || totalCents <= 0) {
    const message = 'The total must be a positive whole number of cents.';
    throw new ValidationError({ totalCents: message }, message);
  }
  const data = { paymentId, paymentSourceId, conferenceId, description, totalCents };
  if (state.status === 'New') return [{ type: 'PaymentInitiated', data }];
  const same = (Object.keys(data) as (keyof PaymentDetails)[]).every((key) => data[key] === state[key]);
  if (same) return [];
  throw new InvalidOperationError('The payment was already initiated with other details.');
}

function complete(state: PaymentState): PaymentEvent[] {
  if (state.status === 'Completed') return [];
  if (state.status === 'Rejected') throw new InvalidOperationError('Cannot complete a rejected payment.');
  return [
    {
      type: 'PaymentCompleted',
      data: { paymentId: state.paymentId, paymentSourceId: state.paymentSourceId },
    },
  ];
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
