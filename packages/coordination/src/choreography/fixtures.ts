/**
 * The shop of the choreography tests: inventory, payments and shipping, each a participant that knows only event
 * types. Effects are recorded once per idempotency key (as an idempotent receiver does), in a ledger the tests read.
 */
import { defineParticipant, type ParticipantHandler } from './participant.js';

export interface ShopFaults {
  /** Sagas whose payment is declined. */
  readonly declined?: ReadonlySet<string>;
  /** Sagas whose shipping fails. */
  readonly undeliverable?: ReadonlySet<string>;
  /** Called at the start of every inventory OrderPlaced delivery (to hold it, or fail it). */
  readonly beforeReserve?: (sagaId: string, idempotencyKey: string) => Promise<void> | void;
}

export function shop(faults: ShopFaults = {}) {
  /** Effects in the order they happened, each applied once per idempotency key. */
  const ledger: string[] = [];
  const applied = new Set<string>();
  /** Every handler call (deliveries), applied or not. */
  const calls: string[] = [];
  const once = (key: string, effect: string) => {
    if (applied.has(key)) return;
    applied.add(key);
    ledger.push(effect);
  };
  const reserved = new Set<string>();

  const release: ParticipantHandler = (event, context) => {
    calls.push(`inventory:${event.type}:${event.sagaId}`);
    if (!reserved.has(event.sagaId)) return undefined; // nothing of ours to undo
    once(context.idempotencyKey, `release stock ${event.sagaId}`);
    reserved.delete(event.sagaId);
    return context.emit('StockReleased', { orderId: event.sagaId });
  };
  const inventory = defineParticipant({
    name: 'inventory',
    emits: { StockReserved: 'step', StockUnavailable: 'failed', StockReleased: 'compensated' },
    reactsTo: {
      OrderPlaced: async (event, context) => {
        calls.push(`inventory:OrderPlaced:${event.sagaId}`);
        await faults.beforeReserve?.(event.sagaId, context.idempotencyKey);
        once(context.idempotencyKey, `reserve stock ${event.sagaId}`);
        reserved.add(event.sagaId);
        return context.emit('StockReserved', { orderId: event.sagaId });
      },
      PaymentDeclined: release,
      ShippingFailed: release,
    },
  });

  const payments = defineParticipant({
    name: 'payments',
    emits: { PaymentCharged: 'step', PaymentDeclined: 'failed', PaymentRefunded: 'compensated' },
    reactsTo: {
      StockReserved: (event, context) => {
        calls.push(`payments:StockReserved:${event.sagaId}`);
        if (faults.declined?.has(event.sagaId))
          return context.emit('PaymentDeclined', { reason: 'card declined' });
        once(context.idempotencyKey, `charge ${event.sagaId}`);
        return context.emit('PaymentCharged', { orderId: event.sagaId });
      },
      ShippingFailed: (event, context) => {
        calls.push(`payments:ShippingFailed:${event.sagaId}`);
        once(context.idempotencyKey, `refund ${event.sagaId}`);
        return context.emit('PaymentRefunded', { orderId: event.sagaId });
      },
    },
  });

  const shipping = defineParticipant({
    name: 'shipping',
    emits: { OrderShipped: 'completed', ShippingFailed: 'failed' },
    reactsTo: {
      PaymentCharged: (event, context) => {
        calls.push(`shipping:PaymentCharged:${event.sagaId}`);
        if (faults.undeliverable?.has(event.sagaId))
          return context.emit('ShippingFailed', { reason: 'no courier' });
        once(context.idempotencyKey, `ship ${event.sagaId}`);
        return context.emit('OrderShipped', { orderId: event.sagaId });
      },
    },
  });

  return { inventory, payments, shipping, participants: [inventory, payments, shipping], ledger, calls };
}
