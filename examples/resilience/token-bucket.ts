// Token bucket: each key (tenant, user, IP) holds up to `capacity` tokens, refilled continuously at `refillRate` per
// second; a request takes one token (or `cost`) or is refused with the time until it can succeed. It allows bursts
// up to the capacity, then the refill rate. The rateLimit policy puts any limiter in front of an operation.
// Prints:
//   request 1: allowed, 2 left
//   request 2: allowed, 1 left
//   request 3: allowed, 0 left
//   request 4: refused, retry in 500 ms
//   500 ms later: allowed
//   tenant-b has a bucket of its own: allowed, 2 left
//   policy: ERR_STRATUS_RATE_LIMITED, retry in 500 ms
//   a queued call ran once a token came back, 500 ms later
import { RateLimitedError, rateLimit, tokenBucket } from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';

// A virtual clock shows half a second passing in no time; leave `clock` out in production.
const clock = new VirtualClock();
const limiter = tokenBucket({ name: 'api', capacity: 3, refillRate: 2, clock });

for (let request = 1; request <= 4; request++) {
  const result = limiter.tryAcquire('tenant-a');
  console.log(
    result.allowed
      ? `request ${request}: allowed, ${result.remaining} left`
      : `request ${request}: refused, retry in ${result.retryAfterMs} ms`,
  );
}
await clock.advance(500);
console.log(`500 ms later: ${limiter.tryAcquire('tenant-a').allowed ? 'allowed' : 'refused'}`);
const other = limiter.tryAcquire('tenant-b');
console.log(
  `tenant-b has a bucket of its own: ${other.allowed ? 'allowed' : 'refused'}, ${other.remaining} left`,
);

// As a policy: the call's `key` option picks the bucket; a refused call fails with RateLimitedError.
const perTenant = rateLimit({ limiter, clock });
await perTenant
  .execute(async () => 'report', { key: 'tenant-a' })
  .catch((error) => {
    if (error instanceof RateLimitedError)
      console.log(`policy: ${error.code}, retry in ${error.retryAfterMs} ms`);
  });

// Queueing mode: wait up to maxWaitMs for a token, in FIFO order per key, instead of failing.
const patient = rateLimit({ limiter, clock, maxWaitMs: 2_000 });
const started = clock.monotonic();
const queued = patient.execute(async () => clock.monotonic() - started, { key: 'tenant-a' });
await clock.advance(500);
console.log(`a queued call ran once a token came back, ${await queued} ms later`);
