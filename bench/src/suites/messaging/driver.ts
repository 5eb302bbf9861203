/**
 * What every queue implementation of the messaging suite provides: a fresh queue per measurement, single and
 * bulk adds, workers calling back for each job, and cleanup. Stratus on each backend and each peer implement it
 * with their normal API, so the measurements (measure.ts) are the same code for all of them.
 */

export type BackendKind = 'sqlite' | 'postgres' | 'redis';

/** Where an implementation keeps its data; serialisable, so a crash worker (a child process) can reach it too. */
export interface Connection {
  /** A database of the implementation's own. */
  readonly postgresUrl?: string;
  readonly redisUrl?: string;
  /** Prepended to the implementation's Redis keys (each has its own). */
  readonly redisPrefix?: string;
  /** A directory for SQLite files (one file per queue). */
  readonly sqliteDir?: string;
}

export interface DriverSpec {
  readonly impl: string;
  readonly connection: Connection;
}

/** The job every implementation carries: about 1 KiB of JSON holding the time it was sent. */
export interface JobData {
  /** performance.now() when the job was made (enqueue-to-start latency reads it). */
  readonly t: number;
  readonly pad: string;
}

/** Length of the JSON of a job, near enough for every `t` a run sees (its digits vary by a few). */
export const PAYLOAD_BYTES = 1024;

const PAD = 'x'.repeat(PAYLOAD_BYTES - JSON.stringify({ t: 123456.78901234, pad: '' }).length);

export function jobData(): JobData {
  return { t: performance.now(), pad: PAD };
}

export interface QueueOptions {
  /**
   * Lock duration (visibility timeout) and, for peers that find stalled jobs by a periodic check, the check's
   * interval too. Undefined: the implementation's defaults.
   */
  readonly lockMs?: number;
}

export interface ConsumeOptions {
  /** Jobs handled at once. */
  readonly concurrency: number;
  /** Fetch and settle in large batches (the implementation's batching mode); only where `batching` is set. */
  readonly batched: boolean;
  /** Stratus only (its cases alone set it): messages received ahead of free handler slots. */
  readonly prefetch?: number;
}

/** A job's handler: resolves at once for a no-op; a crash worker's never resolves. */
export type OnJob = (data: JobData) => void | Promise<void>;

export interface RunningWorker {
  /** Stops taking jobs and closes what the worker opened. */
  stop(): Promise<void>;
}

export interface QueueUnderTest {
  add(data: JobData): Promise<void>;
  addBulk(batch: readonly JobData[]): Promise<void>;
  /** Starts workers on the queue; resolves once they are running. */
  consume(options: ConsumeOptions, onJob: OnJob): Promise<RunningWorker>;
  /** Removes the queue and its jobs and closes what `openQueue` opened. */
  dispose(): Promise<void>;
}

export interface Driver {
  /** The row name: "stratus-redis", "bullmq", ... */
  readonly impl: string;
  readonly backend: BackendKind;
  /** Options this implementation runs with (for the results file). */
  readonly description: Record<string, unknown>;
  /** Cases with `batched: true` are run only by implementations with a batching mode, described here. */
  readonly batching?: string;
  /** How a crash is recovered (the redelivery case), or why it cannot be measured here. */
  readonly redelivery: { readonly how: string } | { readonly skip: string };
  /** A fresh, empty queue; `name` is unique in the run. Reopening an existing name attaches to it. */
  openQueue(name: string, options?: QueueOptions): Promise<QueueUnderTest>;
  close(): Promise<void>;
}

/** Resolves once `count` jobs have started; `started` counts them. */
export class JobCounter {
  started = 0;
  readonly done: Promise<void>;
  #resolve: () => void = () => {};
  readonly #count: number;

  constructor(count: number) {
    this.#count = count;
    this.done = new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** The no-op handler of the throughput cases. */
  readonly onJob = (): void => {
    if (++this.started === this.#count) this.#resolve();
  };
}
