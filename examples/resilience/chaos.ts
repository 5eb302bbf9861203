// Chaos injection: fail, slow down or answer a share of calls on purpose, switched by configuration at run time, to
// check that the policies around a dependency really cope (here a retry absorbs every injected fault).
// Prints:
//   chaos off: 6 of 6 calls reached the service
//   chaos on: 2 of 6 calls failed before reaching the service
//   behind a retry: 6 of 6 calls succeeded
//   latency injected: the call took at least 30 ms: true
//   outcome injected: {"status":503}
import { constantBackoff, systemClock } from '@stratus/core';
import { chaosFault, chaosLatency, chaosOutcome, pipeline, retry } from '@stratus/resilience';

let chaosEnabled = false; // a feature flag, an environment check, an admin endpoint
// Deterministic draws for this output; the default is Math.random.
const draws = [0.1, 0.6, 0.9];
let draw = 0;
const random = () => draws[draw++ % draws.length] as number;

const faults = chaosFault({
  injectionRate: 1 / 3,
  enabled: () => chaosEnabled, // read on every call
  fault: () => Object.assign(new Error('injected: connection reset'), { code: 'ECONNRESET' }),
  random,
});

let reached = 0;
const service = async () => {
  reached++;
  return 'ok';
};
const run = async (policy: { execute(op: () => Promise<string>): Promise<string> }) => {
  let succeeded = 0;
  for (let i = 0; i < 6; i++) if (await policy.execute(service).catch(() => undefined)) succeeded++;
  return succeeded;
};

await run(faults);
console.log(`chaos off: ${reached} of 6 calls reached the service`);
chaosEnabled = true;
const succeeded = await run(faults);
console.log(`chaos on: ${6 - succeeded} of 6 calls failed before reaching the service`);
console.log(
  `behind a retry: ${await run(pipeline(retry({ backoff: constantBackoff(1) }), faults))} of 6 calls succeeded`,
);

const slow = chaosLatency({ injectionRate: 1, latencyMs: 30 });
const started = systemClock.monotonic();
await slow.execute(service);
console.log(`latency injected: the call took at least 30 ms: ${systemClock.monotonic() - started >= 29}`);

const unavailable = chaosOutcome({ injectionRate: 1, outcome: { status: 503 } });
console.log(`outcome injected: ${JSON.stringify(await unavailable.execute(async () => ({ status: 200 })))}`);
