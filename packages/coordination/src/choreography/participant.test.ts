import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { UndeclaredSagaEventError } from './errors.js';
import { compensates, defineParticipant, emitterOf, type ParticipantDefinition } from './participant.js';
import { sagaMessageId } from './saga-event.js';

const handler = () => undefined;
const good: ParticipantDefinition = {
  name: 'payments',
  reactsTo: { StockReserved: handler, ShippingFailed: handler },
  emits: { PaymentCharged: 'step', PaymentDeclined: 'failed', PaymentRefunded: 'compensated' },
};

describe('participants', () => {
  it('emit only the events they declare, with the declared kind', () => {
    const emit = emitterOf(defineParticipant(good));
    assert.deepEqual(emit('PaymentRefunded', { amount: 5 }), {
      type: 'PaymentRefunded',
      kind: 'compensated',
      data: { amount: 5 },
    });
    assert.deepEqual(emit('PaymentCharged'), { type: 'PaymentCharged', kind: 'step', data: null });
    assert.throws(
      () => emit('OrderShipped'),
      (error: unknown) => error instanceof UndeclaredSagaEventError && error.eventType === 'OrderShipped',
    );
    assert.throws(() => emit('toString'), UndeclaredSagaEventError, 'not an inherited property');
  });

  it('say whether they compensate', () => {
    assert.equal(compensates(good), true);
    assert.equal(compensates({ ...good, emits: { PaymentCharged: 'step' } }), false);
  });

  it('are refused with InvalidOptionsError when malformed', () => {
    for (const bad of [
      null,
      { ...good, name: '' },
      { ...good, name: 'initiator' },
      { ...good, name: 'has space' },
      { ...good, reactsTo: {} },
      { ...good, reactsTo: { StockReserved: 'not a function' } },
      { ...good, reactsTo: { 'bad type': handler } },
      { ...good, emits: { PaymentCharged: 'started' } },
      { ...good, emits: { PaymentCharged: 'maybe' } },
      { ...good, emits: null },
    ]) {
      assert.throws(() => defineParticipant(bad as never), InvalidOptionsError, JSON.stringify(bad));
    }
  });

  it('publish with ids derived from what they handled', () => {
    assert.equal(sagaMessageId('inventory', 'm-1', '0'), sagaMessageId('inventory', 'm-1', '0'));
    assert.notEqual(sagaMessageId('inventory', 'm-1', '0'), sagaMessageId('inventory', 'm-1', '1'));
    assert.notEqual(sagaMessageId('ab', 'c'), sagaMessageId('a', 'bc'));
  });
});
