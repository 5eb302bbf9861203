// Circuit breaker: after repeated failures it opens and refuses calls at once (BrokenCircuitError) instead of
// waiting on a dependency that is down; after the open period a trial call goes through, and its outcome closes
// the circuit again or reopens it.
// Prints:
//   closed -> open (trip-rule)
//   call 4 refused without being made: ERR_STRATUS_BROKEN_CIRCUIT
//   open -> half-open (open-elapsed)
//   half-open -> closed (trials-succeeded)
//   state: closed
//   closed -> isolated (isolated)
//   while isolated: ERR_STRATUS_ISOLATED_CIRCUIT
//   isolated -> closed (released)
import { sleep, systemClock } from '@stratus/core';
import { BrokenCircuitError, circuitBreaker } from '@stratus/resilience';

const breaker = circuitBreaker({
  name: 'inventory',
  // Any rule of the list trips it: 3 failures in a row, or half the calls of the last 10 s (once 20 were made).
  trip: [
    { kind: 'consecutive-failures', failures: 3 },
    { kind: 'failure-ratio', ratio: 0.5, windowMs: 10_000, minThroughput: 20 },
  ],
  openMs: 50,
});
breaker.events.on((event) => {
  if (event.type === 'state-change') console.log(`${event.from} -> ${event.to} (${event.reason})`);
});

const down = async (): Promise<string> => {
  throw new Error('connection refused');
};
for (let call = 1; call <= 4; call++) {
  try {
    await breaker.execute(down);
  } catch (error) {
    if (error instanceof BrokenCircuitError) {
      console.log(`call ${call} refused without being made: ${error.code}`);
    }
  }
}

await sleep(systemClock, 60); // the open period ends: the next call is a trial
await breaker.execute(async () => 'in stock');
console.log(`state: ${breaker.state}`);

// Held open by hand (maintenance of the dependency), until every release function is called.
const release = breaker.isolate();
await breaker
  .execute(async () => 'in stock')
  .catch((error: BrokenCircuitError) => {
    console.log(`while isolated: ${error.code}`);
  });
release();
