import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TimeLapseClock } from './time-lapse-clock.js';

test('a time-lapse clock runs its time and its timers `factor` times faster than real time', async () => {
  const clock = new TimeLapseClock(100);
  const [wallStart, monoStart, realStart] = [clock.now(), clock.monotonic(), performance.now()];
  await new Promise<void>((resolve) => clock.setTimeout(resolve, 2_000));
  const real = performance.now() - realStart;
  // 2 s of the clock's time take about 20 ms of real time.
  assert.ok(real >= 15 && real < 1_000, `${real} ms`);
  assert.ok(clock.monotonic() - monoStart >= 2_000 - 100);
  assert.ok(clock.now() - wallStart >= 2_000 - 100);
  assert.throws(() => new TimeLapseClock(0.5), RangeError);
});
