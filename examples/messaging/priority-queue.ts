// Priority Queue: urgent messages overtake the backlog. Either one queue ordered by priority (0 lowest to 9
// highest), strictly or weighted (each priority step worth `agingMs` of waiting, so low messages cannot starve), or
// one queue and consumer pool per priority band (PriorityQueues), each band sized on its own.
// Prints:
//   strict: refund (9), newsletter (0), report (0)
//   weighted: newsletter (0), refund (9), report (0)
//   newsletter handled from tasks.normal
//   refund handled from tasks.high
import { MemoryMessageBackend, Messaging, PriorityQueues } from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });

await messaging.createQueue('strict', { priority: 'strict' }); // the default
await messaging.createQueue('weighted', { priority: { policy: 'weighted', agingMs: 1_000 } });
for (const name of ['strict', 'weighted']) {
  const queue = messaging.queue<string>(name);
  // The newsletter has been available for a minute (deliverAt in the past) when the others arrive.
  await queue.send('newsletter', { priority: 0, deliverAt: Date.now() - 60_000 });
  await queue.send('report', { priority: 0 });
  await queue.send('refund', { priority: 9 });
  const received = await queue.receive({ max: 3 });
  console.log(`${name}: ${received.map((message) => `${message.body} (${message.priority})`).join(', ')}`);
}

// A queue per band: priorities 7-9 go to tasks.high, 0-6 to tasks.normal.
const bands = new PriorityQueues<string>(messaging, [
  { queue: 'tasks.high', minPriority: 7 },
  { queue: 'tasks.normal', minPriority: 0 },
]);
await bands.createQueues();
await bands.send('newsletter', { priority: 0 });
await bands.send('refund', { priority: 9 });
const handled: string[] = [];
await new Promise<void>((resolve) => {
  bands.consume(
    (message) => {
      handled.push(`${message.body} handled from ${message.queue}`);
      if (handled.length === 2) resolve();
    },
    { 'tasks.high': { concurrency: 8 }, 'tasks.normal': { concurrency: 1 } },
  );
});
for (const line of handled.sort()) console.log(line);

await messaging.close();
