// Timeout: bounds how long an operation may take. Cooperative (the default): at the deadline the operation's signal
// aborts and the policy rejects with TimeoutError once the operation gives up. Aggressive: TimeoutError at the
// deadline even when the operation ignores its signal. Nested timeouts take the earliest deadline.
// Prints:
//   cooperative: ERR_STRATUS_TIMEOUT, the operation saw its signal abort: true
//   aggressive: ERR_STRATUS_TIMEOUT, although the operation ignored its signal
//   the inner 1000 ms timeout has about 100 ms left: the outer one's
//   the caller gave up: ERR_STRATUS_CANCELLED
import { remainingMs, sleep, systemClock } from '@stratus/core';
import { TimeoutError, timeout } from '@stratus/resilience';

let sawAbort = false;
try {
  await timeout({ timeoutMs: 50 }).execute(async ({ signal }) => {
    signal.addEventListener('abort', () => {
      sawAbort = true;
    });
    await sleep(systemClock, 10_000, signal); // fetch(url, { signal }) behaves the same
  });
} catch (error) {
  if (error instanceof TimeoutError)
    console.log(`cooperative: ${error.code}, the operation saw its signal abort: ${sawAbort}`);
}

try {
  await timeout({ timeoutMs: 50, strategy: 'aggressive' }).execute(() => sleep(systemClock, 200));
} catch (error) {
  if (error instanceof TimeoutError)
    console.log(`aggressive: ${error.code}, although the operation ignored its signal`);
}

// Hand the outer context on as the inner call's options: the inner timeout cannot extend the outer deadline.
const outer = timeout(100);
const inner = timeout(1_000);
const left = await outer.execute((context) =>
  inner.execute((innerContext) => remainingMs(innerContext), context),
);
console.log(`the inner 1000 ms timeout has about ${Math.round(left / 10) * 10} ms left: the outer one's`);

const caller = new AbortController();
const call = timeout(1_000).execute(({ signal }) => sleep(systemClock, 10_000, signal), {
  signal: caller.signal,
});
caller.abort();
await call.catch((error: { code: string }) => console.log(`the caller gave up: ${error.code}`));
