// Poison messages in a Sequential Convoy: a handler that keeps failing on one message dead-letters it after the
// queue's maxDeliveryCount deliveries, and the dead letter holds its session: the session's later messages wait,
// every other session goes on. Resent once the cause is fixed, it is delivered first, then those that waited.
// A consumer with onPoison 'stop' stops instead, loudly.
// Prints:
//   alert: "paid" of order-a dead-lettered (payment service refused); its session waits
//   order-b: created, paid, shipped
//   order-a: created (1 waiting behind dead letter "paid")
//   order-a: created, paid, shipped
//   audit consumer stopped: ERR_STRATUS_POISON_MESSAGE on audit-1 after 3 deliveries
import { constantBackoff } from '@stratus/core';
import { MemoryMessageBackend, Messaging, type PoisonMessageError } from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
// 'hold' is the default; with 'continue', order-a's "shipped" would run although its "paid" never did.
await messaging.createQueue('order-events', {
  sessions: true,
  maxDeliveryCount: 3,
  onSessionDeadLetter: 'hold',
});
const events = messaging.queue<string>('order-events');
await events.sendBatch(
  ['created', 'paid', 'shipped'].flatMap((body) => [
    { body, id: `a-${body}`, sessionId: 'order-a' },
    { body, id: `b-${body}`, sessionId: 'order-b' },
  ]),
);

let paymentsFixed = false;
const seen = new Map<string, string[]>();
let completed = 0;
let wakeUp = () => {};
messaging.events.on((event) => {
  if (event.type === 'message-dead-lettered' && event.holdsSession)
    console.log(
      `alert: "${event.messageId.slice(2)}" of ${event.sessionId} dead-lettered (${event.description}); its session waits`,
    );
  if (event.type === 'message-completed' || event.type === 'message-dead-lettered') completed++;
  wakeUp();
});
const settled = (count: number) =>
  new Promise<void>((resolve) => {
    wakeUp = () => completed >= count && resolve();
    wakeUp();
  });
messaging.consume<string>(
  'order-events',
  (message) => {
    if (message.body === 'paid' && message.sessionId === 'order-a' && !paymentsFixed)
      throw new Error('payment service refused');
    seen.set(message.sessionId!, [...(seen.get(message.sessionId!) ?? []), message.body]);
  },
  { concurrency: 2, retryBackoff: constantBackoff(10) },
);

await settled(5); // order-b's three, order-a's "created", and the dead letter
console.log(`order-b: ${seen.get('order-b')!.join(', ')}`);
const [dead] = await events.listDeadLetters();
const { waiting } = await events.stats();
console.log(
  `order-a: ${seen.get('order-a')!.join(', ')} (${waiting} waiting behind dead letter "${dead!.id.slice(2)}")`,
);

// The cause is fixed: resend the dead letter (or run `stratus dead-letters order-events --resend all`).
paymentsFixed = true;
await events.resendDeadLetters([dead!.sequence]);
await settled(7);
console.log(`order-a: ${seen.get('order-a')!.join(', ')}`);

// Or stop loudly: once a message is dead-lettered after its last delivery, the consumer stops and `stopped` rejects.
await messaging.createQueue('audit', { maxDeliveryCount: 3 });
await messaging.queue('audit').send({ entry: 1 }, { id: 'audit-1' });
const audit = messaging.consume(
  'audit',
  () => {
    throw new Error('unknown schema');
  },
  { onPoison: 'stop', retryBackoff: constantBackoff(10) },
);
await audit.stopped.catch((error: PoisonMessageError) =>
  console.log(
    `audit consumer stopped: ${error.code} on ${error.messageId} after ${error.deliveryCount} deliveries`,
  ),
);
await messaging.close();
