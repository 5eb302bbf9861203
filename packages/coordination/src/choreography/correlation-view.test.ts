import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { SagaCorrelationView } from './correlation-view.js';
import { shop } from './fixtures/shop.js';
import type { SagaEventBody, SagaEventKind } from './saga-event.js';

const T0 = 1_750_000_000_000;

function event(type: string, participant: string, kind: SagaEventKind, sagaId = 'o-1'): SagaEventBody {
  return { type, sagaId, participant, kind, data: null };
}

describe('SagaCorrelationView', () => {
  it('waits for every participant that acted to compensate after a failure', () => {
    const clock = new VirtualClock({ now: T0 });
    const view = new SagaCorrelationView({ participants: shop().participants, clock, stuckAfterMs: 1000 });
    view.apply(event('OrderPlaced', 'initiator', 'started'), { id: 'm1', at: T0 });
    view.apply(event('StockReserved', 'inventory', 'step'), { id: 'm2', at: T0 + 1 });
    view.apply(event('PaymentCharged', 'payments', 'step'), { id: 'm3', at: T0 + 2 });
    assert.equal(view.get('o-1')?.status, 'in-progress');
    view.apply(event('ShippingFailed', 'shipping', 'failed'), { id: 'm4', at: T0 + 3 });
    assert.deepEqual(view.get('o-1')?.awaitingCompensation, ['inventory', 'payments']);
    assert.equal(view.get('o-1')?.status, 'compensating');
    view.apply(event('PaymentRefunded', 'payments', 'compensated'), { id: 'm5', at: T0 + 5 });
    assert.deepEqual(view.get('o-1')?.awaitingCompensation, ['inventory']);
    assert.equal(view.get('o-1')?.stuck, false);
    view.apply(event('StockReleased', 'inventory', 'compensated'), { id: 'm6', at: T0 + 4 });
    const trace = view.get('o-1');
    assert.equal(trace?.status, 'compensated');
    assert.deepEqual(
      trace?.events.map((e) => e.id),
      ['m1', 'm2', 'm3', 'm4', 'm6', 'm5'],
      'in publish-time order, a late one put in its place',
    );
    assert.equal(trace?.lastEventAt, T0 + 5);
  });

  it('ignores a duplicate delivery and keeps sagas apart by correlation id', () => {
    const view = new SagaCorrelationView({
      participants: shop().participants,
      clock: new VirtualClock({ now: T0 }),
    });
    assert.equal(view.apply(event('OrderPlaced', 'initiator', 'started'), { id: 'm1', at: T0 }), true);
    assert.equal(view.apply(event('OrderPlaced', 'initiator', 'started'), { id: 'm1', at: T0 }), false);
    view.apply(event('OrderPlaced', 'initiator', 'started', 'o-2'), { id: 'm2', at: T0 });
    view.apply(event('OrderShipped', 'shipping', 'completed', 'o-2'), { id: 'm3', at: T0 });
    assert.equal(view.get('o-1')?.events.length, 1);
    assert.deepEqual(
      view.list({ status: 'completed' }).map((t) => t.sagaId),
      ['o-2'],
    );
    assert.equal(view.get('o-3'), undefined);
  });

  it('never calls a finished saga stuck', async () => {
    const clock = new VirtualClock({ now: T0 });
    const view = new SagaCorrelationView({ participants: [], clock, stuckAfterMs: 10 });
    view.apply(event('OrderShipped', 'shipping', 'completed'), { id: 'm1', at: T0 });
    view.apply(event('OrderPlaced', 'initiator', 'started', 'o-2'), { id: 'm2', at: T0 });
    await clock.advance(10);
    assert.equal(view.get('o-1')?.stuck, false);
    assert.equal(view.get('o-2')?.stuck, true);
  });
});
