// Lanes: the work of one key (an order, a stream) runs in order, one piece at a time, while different keys run in
// parallel, so a round trip per piece bounds one lane rather than the whole batch.
// Prints:
//   order-1: placed, paid, shipped
//   order-2: placed, cancelled
//   order-3: placed
//   at most 2 lanes ran at once
//   the batch failed with: card declined
//   order-1 and order-2 still ran to their end: true
import { type LaneWork, runInLanes } from '@stratus/core';

const done = new Map<string, string[]>();
let running = 0;
let mostRunning = 0;

function step(lane: string, name: string, fail = false): LaneWork {
  return {
    lane,
    async run() {
      running++;
      mostRunning = Math.max(mostRunning, running);
      await new Promise((resolve) => setTimeout(resolve, 5)); // a round trip to a database, say
      running--;
      if (fail) throw new Error('card declined');
      done.set(lane, [...(done.get(lane) ?? []), name]);
    },
  };
}

const batch = [
  step('order-1', 'placed'),
  step('order-2', 'placed'),
  step('order-1', 'paid'),
  step('order-3', 'placed'),
  step('order-2', 'cancelled'),
  step('order-1', 'shipped'),
];
await runInLanes(batch, 2);
for (const [lane, steps] of [...done].sort()) console.log(`${lane}: ${steps.join(', ')}`);
console.log(`at most ${mostRunning} lanes ran at once`);

// A failure ends its own lane only: the others run to their end before runInLanes rejects.
done.clear();
try {
  await runInLanes([step('order-1', 'placed'), step('order-3', 'paid', true), step('order-2', 'placed')], 2);
} catch (error) {
  console.log(`the batch failed with: ${(error as Error).message}`);
}
console.log(`order-1 and order-2 still ran to their end: ${done.has('order-1') && done.has('order-2')}`);
