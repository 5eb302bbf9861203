// Concurrency limit: at most `maxInFlight` permits held per key at once, given back when the work is done rather
// than as time passes. Through the rateLimit policy a permit is held while the operation runs.
// Prints:
//   export 1: allowed
//   export 2: allowed
//   export 3: refused while 2 run
//   after one is released: allowed
//   policy: 2 ran at once at most, 5 finished
import { sleep, systemClock } from '@stratus/core';
import { concurrencyLimit, rateLimit } from '@stratus/resilience';

// Two exports per tenant at a time. On a shared store a permit whose holder died is given back after `leaseMs`.
const limiter = concurrencyLimit({ name: 'exports', maxInFlight: 2 });

const first = limiter.tryAcquire('tenant-a');
const second = limiter.tryAcquire('tenant-a');
console.log(`export 1: ${first.allowed ? 'allowed' : 'refused'}`);
console.log(`export 2: ${second.allowed ? 'allowed' : 'refused'}`);
console.log(`export 3: ${limiter.tryAcquire('tenant-a').allowed ? 'allowed' : 'refused while 2 run'}`);
await first.lease?.release();
console.log(`after one is released: ${limiter.tryAcquire('tenant-a').allowed ? 'allowed' : 'refused'}`);
await limiter.reset('tenant-a');

// As a policy with queueing: calls past the limit wait for a permit instead of failing.
const exports = rateLimit({ limiter, maxWaitMs: 5_000 });
let running = 0;
let most = 0;
const runExport = async () => {
  running++;
  most = Math.max(most, running);
  await sleep(systemClock, 10);
  running--;
};
const calls = Array.from({ length: 5 }, () => exports.execute(runExport, { key: 'tenant-a' }));
await Promise.all(calls);
console.log(`policy: ${most} ran at once at most, ${calls.length} finished`);
