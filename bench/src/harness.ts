/**
 * The benchmark harness: warm-up and batch calibration, timed batch samples, rounds interleaved between the
 * implementations of one case, a full GC before every measured block.
 *
 * Method, per case (e.g. "retry") and implementation (e.g. "cockatiel"):
 * - Warm-up: batches of sequential `await op()` for `warmupMs`, resizing the batch until one takes about
 *   `targetBatchMs` (1–5 ms): long enough for the timer's resolution not to matter, short enough to give many
 *   samples.
 * - A round: a GC, then N timed batches. ops/s = total ops ÷ total time.
 * - Two timings (`Timing`). "batch": a batch is timed as a whole, and p50/p99 are percentiles of the
 *   *batch-averaged* per-op latency (batch time ÷ ops per caller). "per-call": as tinybench does, every call
 *   is timed on its own (a clock read before and after it), a batch counts the sum of its calls' times, and
 *   p50/p99 are percentiles of those per-call times. The two clock reads around every call cost about as
 *   much as the cheapest calls measured: batch timing shows the calls' own cost, per-call timing is the one
 *   to set beside tinybench figures. Bursts are timed by the wall clock in both.
 * - `rounds` rounds (3 by default); the implementations of a case take turns, in a rotated order each round,
 *   so drift (thermal, other processes on the box) hits all of them alike. The reported figure is the median
 *   round; the min–max range of the rounds is kept too.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  type BatchSample,
  type CaseSummary,
  type RoundSummary,
  summariseRound,
  summariseRounds,
} from './stats.js';

interface CaseBase {
  /** What is measured, shared by every implementation of it (e.g. "retry"). */
  readonly case: string;
  /** Whose implementation (e.g. "stratus", "cockatiel"). */
  readonly impl: string;
  /** Printed under the table; asked after the runs, so it can report what happened (e.g. rejected jobs). */
  readonly note?: () => string | undefined;
  /** Releases what the case holds (timers, connections) once its runs are done. */
  readonly teardown?: () => unknown;
}

/** `op` awaited in a loop by `concurrency` callers at once (1 by default: plain sequential calls). */
export interface AsyncCase extends CaseBase {
  readonly kind: 'async';
  readonly op: () => PromiseLike<unknown>;
  readonly concurrency?: number;
}

/** `op` called in a loop without awaiting: for synchronous paths such as a rate limiter's `tryAcquire`. */
export interface SyncCase extends CaseBase {
  readonly kind: 'sync';
  readonly op: () => unknown;
}

/** `run` submits `jobs` jobs at once and resolves when all have settled; each run is one timed sample. */
export interface BurstCase extends CaseBase {
  readonly kind: 'burst';
  readonly jobs: number;
  readonly run: () => Promise<void>;
}

export type BenchCase = AsyncCase | SyncCase | BurstCase;

export interface HarnessSettings {
  readonly rounds: number;
  /** Warm-up time per case, spent before its first round. */
  readonly warmupMs: number;
  /** The batch size is tuned so that one batch takes about this long. */
  readonly targetBatchMs: number;
  /** Measuring time per case per round (async and sync cases); the sample bounds below take precedence. */
  readonly roundBudgetMs: number;
  /** Measuring time per case per round for bursts (each burst is one sample). */
  readonly burstRoundBudgetMs: number;
  readonly minSamples: number;
  readonly maxSamples: number;
  readonly minBurstSamples: number;
  readonly maxBurstSamples: number;
}

/** How the calls of a batch are timed: the batch as a whole, or every call on its own (see the top). */
export type Timing = 'batch' | 'per-call';

export const timings: readonly Timing[] = ['batch', 'per-call'];

/** A millisecond clock: `performance` in real runs, a scripted one in tests. */
export interface BenchClock {
  now(): number;
}

export const defaultSettings: HarnessSettings = {
  rounds: 3,
  warmupMs: 300,
  targetBatchMs: 2,
  roundBudgetMs: 500,
  burstRoundBudgetMs: 1500,
  minSamples: 20,
  maxSamples: 400,
  minBurstSamples: 3,
  maxBurstSamples: 30,
};

export interface CaseResult {
  readonly case: string;
  readonly impl: string;
  readonly kind: BenchCase['kind'];
  /** Concurrent callers (1: sequential calls). */
  readonly callers: number;
  readonly summary: CaseSummary;
  /** Operations per timed batch (jobs per burst for bursts). */
  readonly batchOps: number;
  /** Timed batches over all rounds. */
  readonly samples: number;
  readonly note: string | undefined;
}

/** A full garbage collection, or nothing when the runtime will not expose one. */
export interface Collector {
  readonly collect: () => void;
  readonly how: string;
}

/**
 * `gc()` from `--expose-gc`; else the same flag set at run time (a new VM context then gets a `gc`); else a
 * no-op, saying so.
 */
export function findCollector(): Collector {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return { collect: () => exposed(), how: '--expose-gc' };
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    if (typeof gc === 'function') return { collect: () => gc(), how: 'expose-gc set at run time (v8 flag)' };
  } catch {
    // Fall through: no way to force a GC here.
  }
  return { collect: () => {}, how: 'unavailable (skipped)' };
}

/** The loops' parameters: the batch loops use the first two, the per-call loops log into `latencies`. */
type LoopArgs = [op: () => unknown, n: number, clock: BenchClock, latencies: Float64Array, at: number];
type AsyncLoop = (...args: LoopArgs) => Promise<void>;
type SyncLoop = (...args: LoopArgs) => unknown;

const loopParameters = ['op', 'n', 'clock', 'latencies', 'at'];

/**
 * Loop bodies by timing. The per-call ones time each call as tinybench does (a clock read on either side of
 * it) and write its time to `latencies[at + i]`.
 */
const loopBodies: Record<Timing, Record<'async' | 'sync', string>> = {
  batch: {
    async: 'for (let i = 0; i < n; i++) await op();',
    sync: 'let last; for (let i = 0; i < n; i++) last = op(); return last;',
  },
  'per-call': {
    async:
      'for (let i = 0; i < n; i++) { const start = clock.now(); await op(); ' +
      'latencies[at + i] = clock.now() - start; }',
    sync:
      'let last; for (let i = 0; i < n; i++) { const start = clock.now(); last = op(); ' +
      'latencies[at + i] = clock.now() - start; } return last;',
  },
};

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
  ...args: string[]
) => AsyncLoop;

let loopSerial = 0;

/**
 * Every case gets a batch loop compiled from its own source text (the serial makes each text unique, so V8
 * neither shares the compiled code nor its type feedback between cases). With one shared loop, the call
 * `op()` would see every case's function, turn megamorphic and stop inlining, and whichever case ran first
 * would have had an unfair advantage.
 */
function loopSource(kind: 'async' | 'sync', timing: Timing): string {
  loopSerial++;
  return `/* ${timing} loop ${loopSerial} */ ${loopBodies[timing][kind]}`;
}

const compileAsyncLoop = (timing: Timing) =>
  new AsyncFunction(...loopParameters, loopSource('async', timing));

const compileSyncLoop = (timing: Timing) =>
  new Function(...loopParameters, loopSource('sync', timing)) as SyncLoop;

/**
 * The per-call times of the calls timed so far in a round (ms), in one buffer reused through the run, so
 * that measuring allocates nothing: `runCases` makes room before the GC that opens each measured block.
 */
export class LatencyLog {
  buffer = new Float64Array(0);
  length = 0;

  /** Room for `total` latencies in all, keeping those logged (grows only during warm-ups). */
  reserve(total: number): void {
    if (this.buffer.length >= total) return;
    const grown = new Float64Array(total);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  clear(): void {
    this.length = 0;
  }

  get room(): number {
    return this.buffer.length - this.length;
  }

  /** The sum of `n` latencies from `at`. */
  sum(at: number, n: number): number {
    let total = 0;
    for (let i = at; i < at + n; i++) total += this.buffer[i] as number;
    return total;
  }

  /** The logged latencies (a view: sorting it sorts the log). */
  view(): Float64Array {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * At most this many per-call latencies are kept per round (128 MiB): a round stops early rather than grow
 * the buffer while it measures. Full runs stay far below it.
 */
export const MAX_LATENCIES_PER_ROUND = 2 ** 24;

/** Where synchronous results go, so the optimiser cannot drop the calls that produced them. */
export let sink: unknown;

/** One case made runnable: time a batch of `n` ops (or one burst). */
interface Runner {
  readonly source: BenchCase;
  /** Ops in a batch are a multiple of this (the number of concurrent callers). */
  readonly callers: number;
  /** Whether `time` logs every call's time (per-call timing of async and sync cases; never bursts). */
  readonly logs: boolean;
  /**
   * Runs `n` ops and returns the milliseconds they count for: the wall clock of the batch (or burst), or
   * with per-call timing the sum of the calls' times ÷ callers, each call's time appended to the log.
   */
  time(n: number): Promise<number>;
}

function makeRunner(source: BenchCase, timing: Timing, clock: BenchClock, log: LatencyLog): Runner {
  const logs = timing === 'per-call' && source.kind !== 'burst';
  /**
   * Times `batch`, `n` ops shared by `callers`: by the wall clock, or (per-call timing) by the times of its
   * calls, which it writes to the log from `at`.
   */
  const time = async (
    n: number,
    callers: number,
    batch: (latencies: Float64Array, at: number) => unknown,
  ) => {
    if (logs) {
      const at = log.length;
      log.reserve(at + n);
      await batch(log.buffer, at);
      log.length = at + n;
      return log.sum(at, n) / callers;
    }
    const start = clock.now();
    await batch(log.buffer, 0);
    return clock.now() - start;
  };
  switch (source.kind) {
    case 'async': {
      const callers = source.concurrency ?? 1;
      if (!Number.isInteger(callers) || callers < 1) throw new RangeError(`${source.impl}: bad concurrency`);
      const loop = compileAsyncLoop(timing);
      const { op } = source;
      const workers: Promise<void>[] = [];
      return {
        source,
        callers,
        logs,
        time: (n) =>
          time(n, callers, (latencies, at) => {
            if (callers === 1) return loop(op, n, clock, latencies, at);
            const each = n / callers;
            for (let c = 0; c < callers; c++) workers[c] = loop(op, each, clock, latencies, at + c * each);
            return Promise.all(workers);
          }),
      };
    }
    case 'sync': {
      const loop = compileSyncLoop(timing);
      const { op } = source;
      return {
        source,
        callers: 1,
        logs,
        time: (n) =>
          time(n, 1, (latencies, at) => {
            sink = loop(op, n, clock, latencies, at);
          }),
      };
    }
    case 'burst':
      return { source, callers: 1, logs, time: () => time(source.jobs, 1, () => source.run()) };
  }
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/** Rounds `n` to a positive multiple of `step`. */
const multipleOf = (n: number, step: number) => Math.max(step, Math.round(n / step) * step);

interface Plan {
  readonly runner: Runner;
  readonly batchOps: number;
}

/** Warms a case up and decides its batch size. */
async function plan(
  runner: Runner,
  settings: HarnessSettings,
  clock: BenchClock,
  log: LatencyLog,
): Promise<Plan> {
  const deadline = clock.now() + settings.warmupMs;
  if (runner.source.kind === 'burst') {
    do await runner.time(1);
    while (clock.now() < deadline);
    return { runner, batchOps: runner.source.jobs };
  }
  const { callers } = runner;
  const target = settings.targetBatchMs;
  let n = callers;
  const resize = (ms: number) => {
    // Grow at most 8x per step: the first batches run cold and would overestimate the cost per op.
    n = multipleOf(clamp(n * (target / Math.max(ms, 0.001)), n / 8, n * 8), callers);
  };
  // Warm-up latencies are not kept: the log restarts with every batch.
  const time = (ops: number) => {
    log.clear();
    return runner.time(ops);
  };
  do resize(await time(n));
  while (clock.now() < deadline);
  // Settle on the warm cost: the median of a few batches at the final size.
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) warm.push(await time(n));
  warm.sort((x, y) => x - y);
  resize(warm[2] as number);
  return { runner, batchOps: n };
}

/** Room in the log for a round of `p`: its maximum samples, within `MAX_LATENCIES_PER_ROUND`. */
function reserveRound(p: Plan, settings: HarnessSettings, log: LatencyLog): void {
  if (!p.runner.logs) return;
  const most = Math.min(settings.maxSamples * p.batchOps, MAX_LATENCIES_PER_ROUND);
  log.reserve(Math.max(most, settings.minSamples * p.batchOps));
}

/**
 * One round of one case: timed batches until the round's budget is spent (within the sample bounds), so a
 * case that turns out slower than its calibration cannot stretch the run. With per-call timing, the round
 * also ends when the log is full.
 */
async function measureRound(
  p: Plan,
  settings: HarnessSettings,
  clock: BenchClock,
  log: LatencyLog,
): Promise<BatchSample[]> {
  const burst = p.runner.source.kind === 'burst';
  const min = burst ? settings.minBurstSamples : settings.minSamples;
  const max = burst ? settings.maxBurstSamples : settings.maxSamples;
  const end = clock.now() + (burst ? settings.burstRoundBudgetMs : settings.roundBudgetMs);
  const samples: BatchSample[] = [];
  const full = () => p.runner.logs && samples.length >= min && log.room < p.batchOps;
  while (samples.length < max && (samples.length < min || clock.now() < end) && !full()) {
    samples.push({ ops: p.batchOps, ms: await p.runner.time(p.batchOps) });
  }
  return samples;
}

/** Groups cases by `case`, keeping the order in which each case first appears. */
export function groupByCase(cases: readonly BenchCase[]): BenchCase[][] {
  const groups = new Map<string, BenchCase[]>();
  for (const c of cases) {
    const group = groups.get(c.case);
    if (group) {
      if (group.some((other) => other.impl === c.impl)) throw new Error(`duplicate case ${c.case}/${c.impl}`);
      group.push(c);
    } else groups.set(c.case, [c]);
  }
  return [...groups.values()];
}

export interface RunOptions {
  readonly settings?: HarnessSettings;
  /** How calls are timed: "batch" (the default) or "per-call". */
  readonly timing?: Timing;
  readonly collector?: Collector;
  /** The clock every measurement reads (`performance` unless a test scripts one). */
  readonly clock?: BenchClock;
  /** Progress lines (one per case). */
  readonly log?: (line: string) => void;
}

/** Runs every case (grouped by `case`, implementations interleaved round by round) and summarises each. */
export async function runCases(cases: readonly BenchCase[], options: RunOptions = {}): Promise<CaseResult[]> {
  const settings = options.settings ?? defaultSettings;
  const timing = options.timing ?? 'batch';
  const { collect } = options.collector ?? findCollector();
  const clock = options.clock ?? performance;
  const progress = options.log ?? (() => {});
  const latencies = new LatencyLog();
  const results: CaseResult[] = [];
  for (const group of groupByCase(cases)) {
    const plans: Plan[] = [];
    for (const c of group) {
      collect();
      plans.push(await plan(makeRunner(c, timing, clock, latencies), settings, clock, latencies));
    }
    const rounds: RoundSummary[][] = plans.map(() => []);
    const sampleCounts = plans.map(() => 0);
    for (let r = 0; r < settings.rounds; r++) {
      for (let k = 0; k < plans.length; k++) {
        const index = (k + r) % plans.length;
        const p = plans[index] as Plan;
        latencies.clear();
        reserveRound(p, settings, latencies);
        collect();
        const samples = await measureRound(p, settings, clock, latencies);
        const logged = p.runner.logs ? latencies.view() : undefined;
        rounds[index]?.push(summariseRound(samples, p.runner.callers, logged));
        sampleCounts[index] = (sampleCounts[index] ?? 0) + samples.length;
      }
    }
    for (const [index, p] of plans.entries()) {
      const summary = summariseRounds(rounds[index] ?? []);
      const { source } = p.runner;
      await source.teardown?.();
      const result: CaseResult = {
        case: source.case,
        impl: source.impl,
        kind: source.kind,
        callers: p.runner.callers,
        summary,
        batchOps: p.batchOps,
        samples: sampleCounts[index] ?? 0,
        note: source.note?.(),
      };
      results.push(result);
      progress(
        `${result.case} / ${result.impl}: ${Math.round(summary.opsPerSec).toLocaleString('en-US')} ops/s ` +
          `(batch ${p.batchOps}, ${result.samples} samples in ${settings.rounds} rounds)`,
      );
    }
  }
  return results;
}

/** A named set of cases, built on demand (it may start servers). */
export interface Suite {
  readonly name: string;
  prepare(): Promise<PreparedSuite>;
}

export interface PreparedSuite {
  readonly cases: BenchCase[];
  /** What the cases were run with (payload, limits, servers): goes into the results file. */
  readonly settings: Record<string, unknown>;
  /** Cases that could not run, each with the reason. */
  readonly skipped: string[];
  close(): Promise<void>;
}

/**
 * A suite that times its own cases instead of the batches above: fixed job counts through queues, latencies of
 * single events, crash recovery (the messaging suite). It still reports `CaseResult`s, so the table and the
 * results file are the same.
 */
export interface SelfTimedSuite {
  readonly name: string;
  readonly selfTimed: true;
  /** `quick`: small counts, one round (a smoke check); `only`: these cases only. */
  prepare(options: SelfTimedOptions): Promise<PreparedSelfTimedSuite>;
}

export interface SelfTimedOptions {
  readonly quick: boolean;
  readonly only: readonly string[] | undefined;
  /** Progress lines. */
  readonly log: (line: string) => void;
}

export interface PreparedSelfTimedSuite {
  /** The Stratus implementation each row's ratio is taken against (see report.ts `Counterpart`). */
  readonly counterpart?: (impl: string) => string | undefined;
  run(): Promise<SelfTimedRun>;
  close(): Promise<void>;
}

export interface SelfTimedRun {
  readonly results: CaseResult[];
  /** What the cases were run with (servers, counts, per-row settings): goes into the results file. */
  readonly settings: Record<string, unknown>;
  /** Cases or implementations that could not run, each with the reason. */
  readonly skipped: string[];
}
