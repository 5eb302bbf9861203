/**
 * The benchmark harness: warm-up and batch calibration, timed batch samples, rounds interleaved between the
 * implementations of one case, a full GC before every measured block.
 *
 * Method, per case (e.g. "retry") and implementation (e.g. "cockatiel"):
 * - Warm-up: batches of sequential `await op()` for `warmupMs`, resizing the batch until one takes about
 *   `targetBatchMs` (1–5 ms): long enough for the timer's resolution not to matter, short enough to give many
 *   samples.
 * - A round: a GC, then N timed batches. ops/s = total ops ÷ total time; p50/p99 are percentiles of the
 *   *batch-averaged* per-op latency (batch time ÷ ops per caller), not of single calls: timing each call of a
 *   sub-microsecond operation would measure the timer, not the call.
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

type AsyncLoop = (op: () => PromiseLike<unknown>, n: number) => Promise<void>;
type SyncLoop = (op: () => unknown, n: number) => unknown;

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
function compileAsyncLoop(): AsyncLoop {
  loopSerial++;
  return new AsyncFunction(
    'op',
    'n',
    `/* batch loop ${loopSerial} */ for (let i = 0; i < n; i++) await op();`,
  );
}

function compileSyncLoop(): SyncLoop {
  loopSerial++;
  return new Function(
    'op',
    'n',
    `/* batch loop ${loopSerial} */ let last; for (let i = 0; i < n; i++) last = op(); return last;`,
  ) as SyncLoop;
}

/** Where synchronous results go, so the optimiser cannot drop the calls that produced them. */
export let sink: unknown;

/** One case made runnable: time a batch of `n` ops (or one burst). */
interface Runner {
  readonly source: BenchCase;
  /** Ops in a batch are a multiple of this (the number of concurrent callers). */
  readonly callers: number;
  time(n: number): Promise<number>;
}

function makeRunner(source: BenchCase): Runner {
  switch (source.kind) {
    case 'async': {
      const callers = source.concurrency ?? 1;
      if (!Number.isInteger(callers) || callers < 1) throw new RangeError(`${source.impl}: bad concurrency`);
      const loop = compileAsyncLoop();
      const { op } = source;
      const workers: Promise<void>[] = [];
      return {
        source,
        callers,
        async time(n) {
          const start = performance.now();
          if (callers === 1) {
            await loop(op, n);
          } else {
            for (let c = 0; c < callers; c++) workers[c] = loop(op, n / callers);
            await Promise.all(workers);
          }
          return performance.now() - start;
        },
      };
    }
    case 'sync': {
      const loop = compileSyncLoop();
      const { op } = source;
      return {
        source,
        callers: 1,
        async time(n) {
          const start = performance.now();
          sink = loop(op, n);
          return performance.now() - start;
        },
      };
    }
    case 'burst':
      return {
        source,
        callers: 1,
        async time() {
          const start = performance.now();
          await source.run();
          return performance.now() - start;
        },
      };
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
async function plan(runner: Runner, settings: HarnessSettings): Promise<Plan> {
  const deadline = performance.now() + settings.warmupMs;
  if (runner.source.kind === 'burst') {
    do await runner.time(1);
    while (performance.now() < deadline);
    return { runner, batchOps: runner.source.jobs };
  }
  const { callers } = runner;
  const target = settings.targetBatchMs;
  let n = callers;
  const resize = (ms: number) => {
    // Grow at most 8x per step: the first batches run cold and would overestimate the cost per op.
    n = multipleOf(clamp(n * (target / Math.max(ms, 0.001)), n / 8, n * 8), callers);
  };
  do resize(await runner.time(n));
  while (performance.now() < deadline);
  // Settle on the warm cost: the median of a few batches at the final size.
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) warm.push(await runner.time(n));
  warm.sort((x, y) => x - y);
  resize(warm[2] as number);
  return { runner, batchOps: n };
}

/**
 * One round of one case: timed batches until the round's budget is spent (within the sample bounds), so a
 * case that turns out slower than its calibration cannot stretch the run.
 */
async function measureRound(p: Plan, settings: HarnessSettings): Promise<BatchSample[]> {
  const burst = p.runner.source.kind === 'burst';
  const min = burst ? settings.minBurstSamples : settings.minSamples;
  const max = burst ? settings.maxBurstSamples : settings.maxSamples;
  const end = performance.now() + (burst ? settings.burstRoundBudgetMs : settings.roundBudgetMs);
  const samples: BatchSample[] = [];
  while (samples.length < max && (samples.length < min || performance.now() < end)) {
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
  readonly collector?: Collector;
  /** Progress lines (one per case). */
  readonly log?: (line: string) => void;
}

/** Runs every case (grouped by `case`, implementations interleaved round by round) and summarises each. */
export async function runCases(cases: readonly BenchCase[], options: RunOptions = {}): Promise<CaseResult[]> {
  const settings = options.settings ?? defaultSettings;
  const { collect } = options.collector ?? findCollector();
  const log = options.log ?? (() => {});
  const results: CaseResult[] = [];
  for (const group of groupByCase(cases)) {
    const plans: Plan[] = [];
    for (const c of group) {
      collect();
      plans.push(await plan(makeRunner(c), settings));
    }
    const rounds: RoundSummary[][] = plans.map(() => []);
    const sampleCounts = plans.map(() => 0);
    for (let r = 0; r < settings.rounds; r++) {
      for (let k = 0; k < plans.length; k++) {
        const index = (k + r) % plans.length;
        const p = plans[index] as Plan;
        collect();
        const samples = await measureRound(p, settings);
        rounds[index]?.push(summariseRound(samples, p.runner.callers));
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
      log(
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
