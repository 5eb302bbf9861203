// Hedging: when an attempt is slow, launch another copy of the operation in parallel; the first success wins and
// the others are aborted through their own signals. Only for idempotent operations (reads).
// Prints:
//   hedge: attempt 2 launched (delay)
//   winner: attempt 2
//   answer: from replica-b
//   the slow attempt was aborted: true
import { sleep, systemClock } from '@stratus/core';
import { hedging } from '@stratus/resilience';

// Hedge after 20 ms without an answer; `delay: { percentile: 0.95, fallbackMs: 20 }` adapts it to observed latency.
const hedged = hedging({ maxHedgedAttempts: 1, delayMs: 20 });
hedged.events.on((event) => {
  if (event.type === 'hedge') console.log(`hedge: attempt ${event.attempt} launched (${event.reason})`);
  if (event.type === 'winner') console.log(`winner: attempt ${event.attempt}`);
});

let slowAborted = false;
const answer = await hedged.execute(async ({ attempt, signal }) => {
  if (attempt === 1) {
    signal.addEventListener('abort', () => {
      slowAborted = true;
    });
    await sleep(systemClock, 5_000, signal); // replica-a is having a bad moment
    return 'from replica-a';
  }
  return 'from replica-b';
});
console.log(`answer: ${answer}`);
console.log(`the slow attempt was aborted: ${slowAborted}`);
