// Sequential Convoy: messages that belong together (one order's events) are processed in the order they were sent,
// one at a time, while different groups run in parallel. On a queue with sessions every message carries a session
// id; a consumer holds a session while it handles its head, and the session's state is kept with the queue.
// Prints:
//   order-a: created, paid, shipped (3 steps in session state)
//   order-b: created, cancelled (2 steps in session state)
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('order-events', { sessions: true });
const events = messaging.queue<string>('order-events');
// Interleaved, as they arrive from many producers; each order's events in its own order.
await events.sendBatch([
  { body: 'created', sessionId: 'order-a' },
  { body: 'created', sessionId: 'order-b' },
  { body: 'paid', sessionId: 'order-a' },
  { body: 'cancelled', sessionId: 'order-b' },
  { body: 'shipped', sessionId: 'order-a' },
]);

const seen = new Map<string, string[]>();
await new Promise<void>((resolve) => {
  let handled = 0;
  messaging.consume<string>(
    'order-events',
    async (message, { session }) => {
      // A random pause: with 4 handlers, a later message would overtake an earlier one without sessions.
      await new Promise((done) => setTimeout(done, Math.random() * 20));
      seen.set(message.sessionId!, [...(seen.get(message.sessionId!) ?? []), message.body]);
      const steps = ((await session!.getState<number>()) ?? 0) + 1;
      await session!.setState(steps);
      if (++handled === 5) resolve();
    },
    { concurrency: 4, sessionBatch: 2 }, // sessionBatch: lock a session's next message with its head
  );
});
for (const [order, steps] of [...seen].sort()) {
  const state = await events.getSessionState<number>(order);
  console.log(`${order}: ${steps.join(', ')} (${state} steps in session state)`);
}
await messaging.close();
