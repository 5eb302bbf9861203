// Retry: an operation that fails with a transient fault (a network error, a timeout, HTTP 408/429/5xx) is tried
// again after a backoff; a permanent one (HTTP 404) is not. The operation is told its attempt number.
// Prints:
//   attempt 1 failed (read ECONNRESET), retry in 10 ms
//   attempt 2 failed (HTTP 503), retry in 20 ms
//   answered on attempt 3: {"price":42}
//   a 404 is not retried: 1 attempt
//   attempt 1 failed (read ECONNRESET), retry in 10 ms
//   attempt 2 failed (read ECONNRESET), retry in 20 ms
//   gave up after 3 attempts (max-attempts)
//   the caller gets the last error: read ECONNRESET
import { exponentialBackoff } from '@stratus/core';
import { retry } from '@stratus/resilience';

class HttpError extends Error {
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}
const connectionReset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

// jitter: 'equal' (the default backoff's) spreads clients apart in production; none keeps this output exact.
const policy = retry({ maxAttempts: 3, backoff: exponentialBackoff({ initialMs: 10, jitter: 'none' }) });
policy.events.on((event) => {
  if (event.type === 'retry') {
    const cause = 'error' in event.cause ? (event.cause.error as Error).message : 'a failed result';
    console.log(`attempt ${event.attempt} failed (${cause}), retry in ${event.delayMs} ms`);
  }
  if (event.type === 'give-up') console.log(`gave up after ${event.attempts} attempts (${event.reason})`);
});

const quote = await policy.execute(async ({ attempt }) => {
  if (attempt === 1) throw connectionReset();
  if (attempt === 2) throw new HttpError(503);
  return { price: 42 };
});
console.log(`answered on attempt 3: ${JSON.stringify(quote)}`);

let calls = 0;
await policy
  .execute(() => {
    calls++;
    throw new HttpError(404);
  })
  .catch(() => {});
console.log(`a 404 is not retried: ${calls} attempt`);

try {
  await policy.execute(() => {
    throw connectionReset();
  });
} catch (error) {
  console.log(`the caller gets the last error: ${(error as Error).message}`);
}
