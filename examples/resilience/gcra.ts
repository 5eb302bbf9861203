// GCRA (generic cell rate algorithm, as in redis-cell): a sustained rate of `limit` per `periodMs` with bursts of up
// to `burst`, kept as one timestamp per key, the smallest state of all limiters. After a burst, requests are
// admitted at exactly the rate: here one every 100 ms.
// Prints:
//   burst: 3 of 5 allowed
//   refused, retry in 100 ms
//   100 ms later: allowed
//   at once again: refused
import { gcra } from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';

// A virtual clock shows the spacing exactly; leave `clock` out in production.
const clock = new VirtualClock();
const limiter = gcra({ name: 'sms', limit: 10, periodMs: 1_000, burst: 3, clock });

const results = Array.from({ length: 5 }, () => limiter.tryAcquire('+15551234567'));
console.log(`burst: ${results.filter((result) => result.allowed).length} of 5 allowed`);
console.log(`refused, retry in ${results[4]?.retryAfterMs} ms`);
await clock.advance(100);
console.log(`100 ms later: ${limiter.tryAcquire('+15551234567').allowed ? 'allowed' : 'refused'}`);
console.log(`at once again: ${limiter.tryAcquire('+15551234567').allowed ? 'allowed' : 'refused'}`);
