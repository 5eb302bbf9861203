/**
 * Time to redelivery after a crash: a worker process (crash-worker.ts) takes the only job of a queue and is
 * SIGKILLed while it holds it; the clock runs from the kill until the job starts in a worker of this process,
 * which was started before the kill and waits on the same queue.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { runChild } from '@stratus/testkit';
import { type Driver, type DriverSpec, jobData } from './driver.js';
import { type Measurement, within } from './measure.js';

/** Lets the surviving worker reach its idle wait before the kill. */
const SETTLE_MS = 200;
/** A child's start (tsx compiling the drivers) on a busy 2-core box. */
const CHILD_START_MS = 60_000;

export async function redelivery(
  driver: Driver,
  spec: DriverSpec,
  name: string,
  lockMs: number,
  capMs: number,
): Promise<Measurement> {
  const queue = await driver.openQueue(name, { lockMs });
  const child = runChild(new URL('./crash-worker.ts', import.meta.url), {
    args: [JSON.stringify({ spec, queue: name, lockMs })],
    lifetimeMs: CHILD_START_MS + capMs,
  });
  try {
    await child.nextMessage((m) => (m as { ready?: boolean }).ready === true, CHILD_START_MS);
    await queue.add(jobData());
    await child.nextMessage((m) => (m as { started?: boolean }).started === true, capMs);
    let redeliveredAt = Number.NaN;
    let redelivered: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      redelivered = resolve;
    });
    const worker = await queue.consume({ concurrency: 1, batched: false }, () => {
      redeliveredAt = performance.now();
      redelivered();
    });
    try {
      await sleep(SETTLE_MS);
      if (!Number.isNaN(redeliveredAt)) throw new Error(`${driver.impl}: the job ran twice before the crash`);
      const killedAt = performance.now();
      child.kill('SIGKILL');
      const inTime = await within(
        started.then(() => true),
        capMs,
        false,
      );
      const ms = (inTime ? redeliveredAt : performance.now()) - killedAt;
      return { jobs: inTime ? 1 : 0, ms, latencies: [ms], capped: !inTime };
    } finally {
      await worker.stop();
    }
  } finally {
    child.kill('SIGKILL');
    await child.exited;
    await queue.dispose();
  }
}
