// Competing Consumers: several consumers (here two in one process; in production, as many processes as you like on
// one backend) take messages from the same queue, each message going to one of them. A handler that throws has its
// message come back after a backoff; one that keeps failing ends in the dead-letter queue with the error.
// Prints:
//   job-3 failed on delivery 1, back in 10 ms
//   job-6 dead-lettered after 3 deliveries: poison message
//   6 jobs done, none twice
import { constantBackoff } from '@stratus/core';
import { closeOnSignals, MemoryMessageBackend, type MessageHandler, Messaging } from '@stratus/messaging';

const messaging = new Messaging({ backend: new MemoryMessageBackend() });
await messaging.createQueue('jobs', { maxDeliveryCount: 3 });
for (let i = 1; i <= 7; i++) await messaging.queue('jobs').send({ job: `job-${i}` }, { id: `job-${i}` });

const done: string[] = [];
const handler: MessageHandler<{ job: string }> = async (message) => {
  const { job } = message.body;
  if (job === 'job-3' && message.deliveryCount === 1) throw new Error('flaky downstream');
  if (job === 'job-6') throw new Error('poison message');
  done.push(job); // resolving completes the message
};
// Two competing consumers, each running up to 2 handlers at once; failures come back after 10 ms.
const options = { concurrency: 2, retryBackoff: constantBackoff(10) };
messaging.consume('jobs', handler, options);
messaging.consume('jobs', handler, options);
// On SIGTERM or SIGINT: finish running handlers (give the rest back) within 30 s, close the backend, exit.
const removeSignalHandlers = closeOnSignals([messaging], { timeoutMs: 30_000 });

// Every consumer's events: completed, failed (with the retry delay), dead-lettered, lock lost...
await new Promise<void>((resolve) => {
  let settled = 0;
  messaging.events.on((event) => {
    if (event.type === 'message-failed')
      console.log(
        `${event.messageId} failed on delivery ${event.deliveryCount}, back in ${event.retryInMs} ms`,
      );
    if (event.type === 'message-dead-lettered')
      console.log(
        `${event.messageId} dead-lettered after ${event.deliveryCount} deliveries: ${event.description}`,
      );
    if (event.type === 'message-completed' || event.type === 'message-dead-lettered') settled++;
    if (settled === 7) resolve();
  });
});
console.log(`${new Set(done).size} jobs done, ${done.length === 6 ? 'none twice' : 'some twice'}`);
removeSignalHandlers();
await messaging.close(); // what a signal would do: stops both consumers, then closes the backend
