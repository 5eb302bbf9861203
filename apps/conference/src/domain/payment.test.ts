import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { CommandData, PaymentEvent } from './contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from './errors.js';
import { type PaymentCommand, paymentDecider } from './payment.js';
import { given, replay } from './spec.js';

const paymentId = 'payment-1';
const paymentSourceId = 'order-1';
const details: CommandData['InitiateThirdPartyProcessorPayment'] = {
  paymentId,
  paymentSourceId,
  conferenceId: 'conference-1',
  description: 'CQRS summit 2026 registration',
  totalCents: 99_500,
};

const initiate = (overrides: Partial<typeof details> = {}): PaymentCommand => ({
  type: 'InitiateThirdPartyProcessorPayment',
  data: { ...details, ...overrides },
});
const complete: PaymentCommand = { type: 'CompleteThirdPartyProcessorPayment', data: { paymentId } };
const cancel: PaymentCommand = { type: 'CancelThirdPartyProcessorPayment', data: { paymentId } };

const refund: PaymentCommand = {
  type: 'RefundThirdPartyProcessorPayment',
  data: { paymentId, reason: 'The order was already paid.' },
};

const initiated: PaymentEvent[] = [{ type: 'PaymentInitiated', data: { ...details, currency: 'USD' } }];
const completed: PaymentEvent[] = [
  ...initiated,
  { type: 'PaymentCompleted', data: { paymentId, paymentSourceId, amountCents: 99_500, currency: 'USD' } },
];
const rejected: PaymentEvent[] = [
  ...initiated,
  { type: 'PaymentRejected', data: { paymentId, paymentSourceId } },
];

describe('InitiateThirdPartyProcessorPayment', () => {
  test('initiates a new payment with its details', () => {
    assert.deepEqual(given(paymentDecider).when(initiate()), initiated);
    assert.deepEqual(given(paymentDecider, initiated).state, {
      ...details,
      currency: 'USD',
      status: 'Initiated',
      paidCents: 0,
      refundDue: false,
    });
  });

  test('does nothing when repeated with the same details, whatever became of the payment', () => {
    for (const history of [initiated, completed, rejected]) {
      assert.deepEqual(given(paymentDecider, history).when(initiate()), []);
    }
  });

  test('refuses other details for a payment already initiated', () => {
    for (const overrides of [{ totalCents: 1 }, { paymentSourceId: 'order-2' }, { description: 'other' }]) {
      assert.throws(
        () => given(paymentDecider, initiated).when(initiate(overrides)),
        (error: unknown) =>
          error instanceof InvalidOperationError &&
          error.message === 'The payment was already initiated with other details.',
      );
    }
  });

  test('refuses a total that is not a positive whole number of cents', () => {
    for (const totalCents of [0, -100, 10.5, Number.NaN]) {
      assert.throws(
        () => given(paymentDecider).when(initiate({ totalCents })),
        (error: unknown) => error instanceof ValidationError && error.fields.totalCents !== undefined,
      );
    }
  });
});

describe('CompleteThirdPartyProcessorPayment', () => {
  test('completes an initiated payment', () => {
    assert.deepEqual(given(paymentDecider, initiated).when(complete), completed.slice(1));
    assert.equal(given(paymentDecider, completed).state.status, 'Completed');
  });

  test('does nothing for a payment already completed', () => {
    assert.deepEqual(given(paymentDecider, completed).when(complete), []);
  });

  test('refuses a rejected payment and one that does not exist', () => {
    assert.throws(
      () => given(paymentDecider, rejected).when(complete),
      (error: unknown) =>
        error instanceof InvalidOperationError && error.message === 'Cannot complete a rejected payment.',
    );
    assert.throws(
      () => given(paymentDecider).when(complete),
      (error: unknown) => error instanceof NotFoundError && error.entityId === paymentId,
    );
  });
});

describe('CancelThirdPartyProcessorPayment', () => {
  test('rejects an initiated payment', () => {
    assert.deepEqual(given(paymentDecider, initiated).when(cancel), rejected.slice(1));
    assert.equal(given(paymentDecider, rejected).state.status, 'Rejected');
  });

  test('does nothing for a payment already rejected', () => {
    assert.deepEqual(given(paymentDecider, rejected).when(cancel), []);
  });

  test('refuses a completed payment and one that does not exist', () => {
    assert.throws(
      () => given(paymentDecider, completed).when(cancel),
      (error: unknown) =>
        error instanceof InvalidOperationError && error.message === 'Cannot cancel a completed payment.',
    );
    assert.throws(() => given(paymentDecider).when(cancel), NotFoundError);
  });
});

describe('CompleteThirdPartyProcessorPayment with what the processor took', () => {
  test('records the amount and currency taken, even when they differ from the total asked', () => {
    const partly: PaymentCommand = {
      type: 'CompleteThirdPartyProcessorPayment',
      data: { paymentId, amountCents: 100, currency: 'EUR' },
    };
    assert.deepEqual(given(paymentDecider, initiated).when(partly), [
      { type: 'PaymentCompleted', data: { paymentId, paymentSourceId, amountCents: 100, currency: 'EUR' } },
    ]);
  });

  test('owes back at once a payment completed after the order could take it', () => {
    const limited: PaymentEvent[] = [
      { type: 'PaymentInitiated', data: { ...details, currency: 'USD', expiresAt: 1_000 } },
    ];
    const at = (now: number): PaymentCommand => ({
      type: 'CompleteThirdPartyProcessorPayment',
      data: { paymentId, now },
    });
    assert.deepEqual(
      given(paymentDecider, limited)
        .when(at(1_000))
        .map((event) => event.type),
      ['PaymentCompleted'],
    );
    const late = given(paymentDecider, limited).when(at(1_001));
    assert.deepEqual(
      late.map((event) => event.type),
      ['PaymentCompleted', 'PaymentRefundDue'],
    );
    assert.deepEqual(
      late.map((event) => (event.data as { late?: true }).late),
      [true, undefined],
      'the completion says it came late, for the process',
    );
    assert.deepEqual(given(paymentDecider, [...limited, ...late]).when(refund), [], 'owed back once');
  });

  test('refuses an amount that is not a positive whole number of cents', () => {
    const bad: PaymentCommand = {
      type: 'CompleteThirdPartyProcessorPayment',
      data: { paymentId, amountCents: 0 },
    };
    assert.throws(() => given(paymentDecider, initiated).when(bad), ValidationError);
  });
});

describe('RefundThirdPartyProcessorPayment', () => {
  test('records a refund of what a completed payment took, once', () => {
    const due: PaymentEvent[] = [
      {
        type: 'PaymentRefundDue',
        data: {
          paymentId,
          paymentSourceId,
          amountCents: 99_500,
          currency: 'USD',
          reason: 'The order was already paid.',
        },
      },
    ];
    assert.deepEqual(given(paymentDecider, completed).when(refund), due);
    assert.deepEqual(given(paymentDecider, [...completed, ...due]).when(refund), []);
  });

  test('owes nothing for a payment that took nothing', () => {
    assert.deepEqual(given(paymentDecider, initiated).when(refund), []);
    assert.deepEqual(given(paymentDecider, rejected).when(refund), []);
  });
});

describe('any sequence of commands (property)', () => {
  const statusAfter = {
    PaymentInitiated: 'Initiated',
    PaymentCompleted: 'Completed',
    PaymentRejected: 'Rejected',
    PaymentRefundDue: 'Completed',
  };
  const command = fc.constantFrom(initiate(), initiate({ totalCents: 1 }), complete, cancel, refund);

  test('initiates once, ends at most once, and its state is the replay of its events', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 12 }), (commands) => {
        const events: PaymentEvent[] = [];
        let state = paymentDecider.initialState();
        for (const next of commands) {
          try {
            const decided = given(paymentDecider, events).when(next);
            events.push(...decided);
            state = decided.reduce(paymentDecider.evolve, state);
          } catch (error) {
            assert.ok(
              error instanceof InvalidOperationError || error instanceof NotFoundError,
              String(error),
            );
          }
        }
        assert.deepEqual(replay(paymentDecider, events), state);
        const types = events.map((event) => event.type);
        assert.ok(types.length === 0 || (types[0] === 'PaymentInitiated' && types.length <= 3));
        assert.ok(
          !types.includes('PaymentRefundDue') || types[1] === 'PaymentCompleted',
          'refunds follow payments',
        );
        assert.ok(types.slice(1).every((type) => type !== 'PaymentInitiated'));
        const last = types.at(-1);
        assert.equal(state.status, last === undefined ? 'New' : statusAfter[last]);
      }),
      { numRuns: 300 },
    );
  });
});
