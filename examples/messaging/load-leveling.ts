// Queue-Based Load Leveling: a burst of work goes into a queue at once, and the consumer drains it at the rate the
// downstream service can take, paced by a rate limiter from @stratus/resilience (with a Redis or PostgreSQL store,
// one rate shared by every consumer process).
// Prints:
//   20 orders queued at once
//   20 orders handled, paced: at least 0.8 s
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { tokenBucket } from '@stratus/resilience';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('orders');
await messaging
  .queue('orders')
  .sendBatch(Array.from({ length: 20 }, (_, i) => ({ body: { orderId: i + 1 } })));
console.log('20 orders queued at once');

const started = performance.now();
let handled = 0;
await new Promise<void>((resolve) => {
  messaging.consume(
    'orders',
    async () => {
      if (++handled === 20) resolve();
    },
    // 20 handler starts per second at most, in bursts of 2; without it 8 handlers would take the burst at once.
    { concurrency: 8, rateLimit: tokenBucket({ capacity: 2, refillRate: 20 }) },
  );
});
const seconds = (performance.now() - started) / 1000;
console.log(`${handled} orders handled, paced: ${seconds >= 0.8 ? 'at least 0.8 s' : `only ${seconds} s`}`);
await messaging.close();
