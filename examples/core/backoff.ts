// Backoff schedules: the waits a retry loop takes between attempts, here exponential and capped.
// Prints:
//   retry 1 waits 100 ms
//   retry 2 waits 200 ms
//   retry 3 waits 400 ms
//   retry 4 waits 800 ms
//   retry 5 waits 1000 ms
import { exponentialBackoff } from '@stratus/core';

// jitter: 'full' spreads clients out in production; none keeps this output exact.
const backoff = exponentialBackoff({ initialMs: 100, maxMs: 1_000, jitter: 'none' });
let previous = 0;
for (let retry = 1; retry <= 5; retry++) {
  previous = backoff.delay(retry, previous);
  console.log(`retry ${retry} waits ${previous} ms`);
}
