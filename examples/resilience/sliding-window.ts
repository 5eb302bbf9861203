// Windows: a fixed window is the cheapest limit but lets a client spend two quotas across a window edge; a sliding
// log never grants more than `limit` in any window (O(limit) state per key); a sliding counter estimates the same
// from two counts (O(1) state), exact when the previous window's requests were spread evenly.
// Prints:
//   10 requests around the edge at 1000 ms, limit 5 per second
//   fixed window: 10 allowed
//   sliding log: 5 allowed
//   sliding counter: 5 allowed
//   at 1500 ms, 5 more: sliding log 0, sliding counter 2
import {
  fixedWindow,
  type LocalRateLimiter,
  slidingWindowCounter,
  slidingWindowLog,
} from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';

// A virtual clock puts the requests at exact times; leave `clock` out in production.
const clock = new VirtualClock();
const limiters: Record<string, LocalRateLimiter> = {
  'fixed window': fixedWindow({ limit: 5, windowMs: 1_000, clock }),
  'sliding log': slidingWindowLog({ limit: 5, windowMs: 1_000, clock }),
  'sliding counter': slidingWindowCounter({ limit: 5, windowMs: 1_000, clock }),
};
const burst = (limiter: LocalRateLimiter) =>
  Array.from({ length: 5 }, () => limiter.tryAcquire('client')).filter((result) => result.allowed).length;

console.log('10 requests around the edge at 1000 ms, limit 5 per second');
const allowed = new Map<string, number>();
await clock.advanceTo(950);
for (const [name, limiter] of Object.entries(limiters)) allowed.set(name, burst(limiter));
await clock.advanceTo(1_000);
for (const [name, limiter] of Object.entries(limiters)) {
  allowed.set(name, (allowed.get(name) ?? 0) + burst(limiter));
  console.log(`${name}: ${allowed.get(name)} allowed`);
}

await clock.advanceTo(1_500);
const log = burst(limiters['sliding log'] as LocalRateLimiter);
const counter = burst(limiters['sliding counter'] as LocalRateLimiter);
console.log(`at 1500 ms, 5 more: sliding log ${log}, sliding counter ${counter}`);
