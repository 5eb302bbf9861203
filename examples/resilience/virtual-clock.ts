// Testing policies on a virtual clock (@stratus/testkit): time moves only when the test advances it, so backoffs,
// timeouts and open periods pass in no real time; faultyFunction scripts a dependency's answers call by call, with
// errors shaped like the real ones (Node network errors, HTTP errors with status and Retry-After).
// Prints:
//   at 0 ms: 1 call
//   at 1000 ms: 2 calls
//   at 3000 ms: 3 calls
//   answered: in stock
//   3 seconds of backoff took under a second of real time: true
import { exponentialBackoff } from '@stratus/core';
import { retry } from '@stratus/resilience';
import { call, faultyFunction, VirtualClock } from '@stratus/testkit';

const clock = new VirtualClock();
const inventory = faultyFunction({
  sequence: [call.networkError('ECONNRESET'), call.failsWith(503), call.returns('in stock')],
});
const policy = retry({ clock, backoff: exponentialBackoff({ initialMs: 1_000 }) });

const realStart = performance.now();
const answer = policy.execute((context) => inventory(context));
await clock.advance(0);
console.log(`at 0 ms: ${inventory.calls} call`);
await clock.advance(1_000);
console.log(`at 1000 ms: ${inventory.calls} calls`);
await clock.advance(2_000);
console.log(`at 3000 ms: ${inventory.calls} calls`);
console.log(`answered: ${await answer}`);
console.log(
  `3 seconds of backoff took under a second of real time: ${performance.now() - realStart < 1_000}`,
);
