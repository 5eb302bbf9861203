// Choreography: a saga with no central coordinator. Each service reacts to events on a shared topic and publishes
// its own, compensations included; none knows the others, only event types. A correlation view follows every saga
// by its id, to show where each stands: who acted, who failed, who still has to compensate, what is stuck.
// Prints:
//   order-1: completed (acted: inventory, payments)
//   order-2: compensated (acted: inventory; failed: payments; compensated: inventory)
//   order-2 events: OrderPlaced, StockReserved, PaymentDeclined, StockReleased
import { Choreography, defineParticipant, SagaCorrelationView } from '@stratus/coordination';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

const reserved = new Set<string>();
const inventory = defineParticipant({
  name: 'inventory',
  emits: { StockReserved: 'step', StockReleased: 'compensated' },
  reactsTo: {
    OrderPlaced: (event, context) => {
      reserved.add(event.sagaId); // a real service records context.idempotencyKey to act once per message
      return context.emit('StockReserved');
    },
    PaymentDeclined: (event, context) => {
      if (!reserved.delete(event.sagaId)) return undefined; // nothing of ours to undo
      return context.emit('StockReleased');
    },
  },
});
const payments = defineParticipant({
  name: 'payments',
  emits: { PaymentCharged: 'step', PaymentDeclined: 'failed' },
  reactsTo: {
    StockReserved: (event, context) =>
      event.sagaId === 'order-2'
        ? context.emit('PaymentDeclined', { reason: 'card declined' })
        : context.emit('PaymentCharged'),
  },
});
const shipping = defineParticipant({
  name: 'shipping',
  emits: { OrderShipped: 'completed' },
  reactsTo: { PaymentCharged: (_event, context) => context.emit('OrderShipped') },
});

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
const shop = new Choreography({ messaging, topic: 'shop' });
await shop.setup();
const participants = [inventory, payments, shipping];
// Each participant on its own subscription (queue shop.<name>): in production, in its own service's processes.
for (const participant of participants) await shop.run(participant);
const view = new SagaCorrelationView({ participants, stuckAfterMs: 60_000 });
await shop.runView(view); // its own subscription to every event of the topic

const settled = new Promise<void>((resolve) => {
  messaging.events.on((event) => {
    if (event.type !== 'message-completed' || event.queue !== 'shop.view') return;
    if (view.get('order-1')?.status === 'completed' && view.get('order-2')?.status === 'compensated')
      resolve();
  });
});
await shop.start('order-1', 'OrderPlaced', { sku: 'a-1' });
await shop.start('order-2', 'OrderPlaced', { sku: 'b-2' });
await settled;

for (const sagaId of ['order-1', 'order-2']) {
  const trace = view.get(sagaId)!;
  const who = [
    `acted: ${trace.acted.join(', ')}`,
    ...(trace.failed.length > 0 ? [`failed: ${trace.failed.join(', ')}`] : []),
    ...(trace.compensated.length > 0 ? [`compensated: ${trace.compensated.join(', ')}`] : []),
  ];
  console.log(`${sagaId}: ${trace.status} (${who.join('; ')})`);
}
console.log(
  `order-2 events: ${view
    .get('order-2')!
    .events.map((event) => event.type)
    .join(', ')}`,
);
// view.list({ stuck: true }): sagas with no event for stuckAfterMs while unfinished.

await messaging.close(); // stops every consumer it started
