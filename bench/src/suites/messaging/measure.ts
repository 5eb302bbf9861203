/**
 * The measurements of the messaging suite, the same code for every implementation: each runs on a fresh queue
 * and stops at its job count or at its time cap, whichever comes first (a poll-bound peer still ends in time; its
 * rate is then the jobs done ÷ the time taken).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type ConsumeOptions, JobCounter, type JobData, jobData, type QueueUnderTest } from './driver.js';

export interface Measurement {
  /** Jobs done (added, or started by a worker). */
  readonly jobs: number;
  /** Wall clock of the timed part. */
  readonly ms: number;
  /** Times of the timed operations (ms): each add call, each enqueue-to-start latency; empty for processing. */
  readonly latencies: readonly number[];
  /** The time cap ended the measurement before its job count. */
  readonly capped: boolean;
}

/** The value of `promise`, or `onTimeout` when it takes longer than `ms` (the timer is cleared either way). */
export async function within<T, U>(promise: Promise<T>, ms: number, onTimeout: U): Promise<T | U> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(Math.max(0, ms), onTimeout, { signal: timer.signal }).catch(() => onTimeout),
    ]);
  } finally {
    timer.abort();
  }
}

/** Jobs made before the clock starts, so the timed part is the queue's work only. */
const jobs = (count: number): JobData[] => Array.from({ length: count }, jobData);

/** `count` sequential `await add(job)`. */
export async function addOne(queue: QueueUnderTest, count: number, capMs: number): Promise<Measurement> {
  const batch = jobs(count);
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let done = 0;
  while (done < count && performance.now() < deadline) {
    const before = performance.now();
    await queue.add(batch[done] as JobData);
    latencies.push(performance.now() - before);
    done++;
  }
  return { jobs: done, ms: performance.now() - start, latencies, capped: done < count };
}

/** `producers` callers at once, each awaiting its own single adds one after the other (`count` in all). */
export async function addConcurrent(
  queue: QueueUnderTest,
  count: number,
  capMs: number,
  producers: number,
): Promise<Measurement> {
  const batch = jobs(count);
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let next = 0;
  const producer = async () => {
    while (next < count && performance.now() < deadline) {
      const job = batch[next++] as JobData;
      const before = performance.now();
      await queue.add(job);
      latencies.push(performance.now() - before);
    }
  };
  await Promise.all(Array.from({ length: producers }, producer));
  return {
    jobs: latencies.length,
    ms: performance.now() - start,
    latencies,
    capped: latencies.length < count,
  };
}

/** Sequential `await addBulk(batch)` of `batchSize` jobs each. */
export async function addBulk(
  queue: QueueUnderTest,
  count: number,
  capMs: number,
  batchSize: number,
): Promise<Measurement> {
  const batches: JobData[][] = [];
  for (let i = 0; i < count; i += batchSize) batches.push(jobs(Math.min(batchSize, count - i)));
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let done = 0;
  for (const batch of batches) {
    if (performance.now() >= deadline) break;
    const before = performance.now();
    await queue.addBulk(batch);
    latencies.push(performance.now() - before);
    done += batch.length;
  }
  return { jobs: done, ms: performance.now() - start, latencies, capped: done < count };
}

/**
 * `count` jobs added first (not timed), then the clock runs from starting the workers until the last job has
 * started: worker start-up is included, as in the anchors' measurements.
 */
export async function process(
  queue: QueueUnderTest,
  count: number,
  capMs: number,
  options: ConsumeOptions,
  fillBatch: number,
): Promise<Measurement> {
  for (let i = 0; i < count; i += fillBatch) await queue.addBulk(jobs(Math.min(fillBatch, count - i)));
  const counter = new JobCounter(count);
  const start = performance.now();
  const worker = await queue.consume(options, counter.onJob);
  const capped = await within(
    counter.done.then(() => false),
    capMs,
    true,
  );
  const ms = performance.now() - start;
  const done = counter.started;
  await worker.stop();
  return { jobs: done, ms, latencies: [], capped };
}

/**
 * Enqueue-to-start latency into an idle queue: one job at a time (its send time in the payload), the next sent
 * `gapMs` after the previous one started, so the worker is idle again; up to `samples`, within `capMs`.
 */
export async function idleLatency(
  queue: QueueUnderTest,
  samples: number,
  capMs: number,
  gapMs: number,
): Promise<Measurement> {
  let started: ((latency: number) => void) | undefined;
  const worker = await queue.consume({ concurrency: 1, batched: false }, (data) => {
    started?.(performance.now() - data.t);
  });
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  try {
    await sleep(gapMs);
    while (latencies.length < samples && performance.now() < deadline) {
      const latency = new Promise<number>((resolve) => {
        started = resolve;
      });
      await queue.add(jobData());
      const waited = await within(latency, deadline - performance.now(), undefined);
      if (waited === undefined) break;
      latencies.push(waited);
      await sleep(gapMs);
    }
  } finally {
    await worker.stop();
  }
  return {
    jobs: latencies.length,
    ms: performance.now() - start,
    latencies,
    capped: latencies.length < samples,
  };
}
