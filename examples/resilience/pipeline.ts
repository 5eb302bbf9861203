// Pipelines: policies composed in any order, the first outermost. Here a total deadline over a retry, a breaker
// that sees every attempt, and a deadline per attempt; the pipeline relays the events of all of them.
// Prints:
//   attempt 1 starts with about 100 ms left
//   timeout: timeout
//   circuit-breaker: failure
//   retry: retry
//   attempt 2 starts with about 100 ms left
//   circuit-breaker: success
//   retry: success
//   answer: ok
import { constantBackoff, remainingMs, sleep, systemClock } from '@stratus/core';
import { circuitBreaker, pipeline, retry, timeout } from '@stratus/resilience';

const resilient = pipeline(
  timeout({ timeoutMs: 2_000, name: 'total' }), // the whole call, retries included
  retry({ maxAttempts: 3, backoff: constantBackoff(10) }),
  circuitBreaker({ trip: { kind: 'consecutive-failures', failures: 5 } }),
  timeout({ timeoutMs: 100, name: 'per-attempt' }), // each attempt
);
resilient.events.on((event) => console.log(`${event.component}: ${event.type}`));

const answer = await resilient.execute(async ({ attempt, signal }) => {
  console.log(`attempt ${attempt} starts with about ${Math.round(remainingMs(signal) / 100) * 100} ms left`);
  if (attempt === 1) await sleep(systemClock, 10_000, signal); // stuck: the per-attempt timeout ends it
  return 'ok';
});
console.log(`answer: ${answer}`);
