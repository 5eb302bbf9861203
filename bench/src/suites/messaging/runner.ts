/**
 * Runs the messaging cases: per case, a warm-up run of each implementation (which also sizes its job count),
 * then `rounds` rounds in which the implementations take turns in a rotated order, each measurement on a fresh
 * queue. The median round is reported, as in the resilience harness.
 */
import type { CaseResult } from '../../harness.js';
import { percentile, type RoundSummary, summariseRounds } from '../../stats.js';
import type { CaseKind, MeasureContext, Scale } from './cases.js';
import type { Driver, DriverSpec } from './driver.js';
import type { Measurement } from './measure.js';

/**
 * One implementation of a case, ready to measure. `D` is what a case measures (a queue driver here; the
 * eventstore suite passes its own), `S` how to reach its data.
 */
export interface Contender<D extends { readonly impl: string } = Driver, S = DriverSpec> {
  readonly driver: D;
  readonly spec: S;
  /** Runs after each measurement, untimed (vacuuming a PostgreSQL database). */
  readonly afterEach: () => Promise<void>;
}

/** What the runner needs of a case: messaging's CaseDefinition, or another self-timed suite's. */
export interface RunnableCase<D = Driver, S = DriverSpec> {
  readonly name: string;
  readonly kind: CaseKind;
  /** Counts of throughput measurements are multiples of this. */
  readonly step: number;
  measure(context: MeasureContext<D, S>, count: number, capMs: number): Promise<Measurement>;
}

/** What a row ran with, for the results file. */
export interface RowSettings {
  /** Jobs per measurement (throughput), samples asked for (latency), 1 (redelivery). */
  count: number;
  rounds: number;
  /** Jobs or samples each round actually did (fewer when the time cap ended it). */
  done: number[];
  /** The job count was lowered from the suite's because the implementation is slow (see Scale.targetMs). */
  reduced?: true;
}

export interface RunnerOptions {
  readonly scale: Scale;
  readonly log: (line: string) => void;
  /** A queue name not used before in the run. */
  readonly nextName: () => string;
}

export interface CaseOutcome {
  readonly results: CaseResult[];
  readonly rows: Record<string, RowSettings>;
  /** Implementations that failed, with the error. */
  readonly failed: string[];
}

/** A measurement's rate and percentiles; see the suite README for what each kind reports. */
export function summariseMeasurement(kind: CaseKind, m: Measurement): RoundSummary {
  if (kind === 'throughput') {
    const opsPerSec = (m.jobs / m.ms) * 1000;
    // Adds time each call; processing has no call to time: its figure is the cost per job.
    if (m.latencies.length === 0) return { opsPerSec, p50Ms: m.ms / m.jobs, p99Ms: m.ms / m.jobs };
    return { opsPerSec, p50Ms: percentile(m.latencies, 50), p99Ms: percentile(m.latencies, 99) };
  }
  // Time-to-event cases: ops/s = events ÷ sum of their times, i.e. 1000 ÷ the mean time.
  const total = m.latencies.reduce((sum, latency) => sum + latency, 0);
  return {
    opsPerSec: (m.latencies.length / total) * 1000,
    p50Ms: percentile(m.latencies, 50),
    p99Ms: percentile(m.latencies, 99),
  };
}

/** The count a throughput measurement uses: the suite's, or what fits `targetMs` at the warm-up's rate. */
export function sizeCount(
  definition: Pick<RunnableCase<unknown, unknown>, 'kind' | 'step'>,
  scale: Scale,
  warmup: Measurement,
): { count: number; reduced: boolean } {
  if (definition.kind === 'latency') return { count: scale.latencySamples, reduced: false };
  if (definition.kind === 'redelivery') return { count: 1, reduced: false };
  const fits = (warmup.jobs / warmup.ms) * scale.targetMs;
  if (fits >= scale.jobs) return { count: scale.jobs, reduced: false };
  const step = definition.step;
  return { count: Math.max(step, Math.floor(fits / step) * step), reduced: true };
}

function capOf(definition: Pick<RunnableCase<unknown, unknown>, 'kind'>, scale: Scale): number {
  if (definition.kind === 'redelivery') return 4 * scale.lockMs + 5000;
  return definition.kind === 'latency' ? scale.latencyCapMs : scale.capMs;
}

const roundsOf = (definition: Pick<RunnableCase<unknown, unknown>, 'kind'>, scale: Scale) =>
  definition.kind === 'redelivery' ? scale.redeliveryRounds : scale.rounds;

export async function runCase<D extends { readonly impl: string } = Driver, S = DriverSpec>(
  definition: RunnableCase<D, S>,
  contenders: readonly Contender<D, S>[],
  options: RunnerOptions,
): Promise<CaseOutcome> {
  const { scale, log } = options;
  const failed: string[] = [];
  const alive = new Set(contenders);
  const measure = async (contender: Contender<D, S>, count: number, capMs: number) => {
    const context: MeasureContext<D, S> = {
      driver: contender.driver,
      spec: contender.spec,
      name: options.nextName(),
      scale,
    };
    try {
      return await definition.measure(context, count, capMs);
    } catch (error) {
      alive.delete(contender);
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      failed.push(`${definition.name} / ${contender.driver.impl}: ${message}`);
      log(`${definition.name} / ${contender.driver.impl} FAILED: ${message}`);
      return undefined;
    } finally {
      await contender.afterEach();
    }
  };

  const sized = new Map<Contender<D, S>, { count: number; reduced: boolean }>();
  for (const contender of contenders) {
    if (definition.kind === 'redelivery') {
      sized.set(contender, { count: 1, reduced: false });
      continue;
    }
    const warmupCount = definition.kind === 'latency' ? Math.min(20, scale.latencySamples) : scale.warmupJobs;
    const warmup = await measure(contender, roundUp(warmupCount, definition.step), scale.warmupCapMs);
    if (warmup !== undefined) sized.set(contender, sizeCount(definition, scale, warmup));
  }

  const rounds = new Map<Contender<D, S>, { summaries: RoundSummary[]; done: number[] }>();
  for (let round = 0; round < roundsOf(definition, scale); round++) {
    for (let k = 0; k < contenders.length; k++) {
      const contender = contenders[(k + round) % contenders.length] as Contender<D, S>;
      const size = sized.get(contender);
      if (!alive.has(contender) || size === undefined) continue;
      const m = await measure(contender, size.count, capOf(definition, scale));
      if (m === undefined) continue;
      if (m.jobs === 0 && definition.kind !== 'redelivery') {
        alive.delete(contender);
        failed.push(
          `${definition.name} / ${contender.driver.impl}: nothing done within ${capOf(definition, scale)} ms`,
        );
        continue;
      }
      const entry = rounds.get(contender) ?? { summaries: [], done: [] };
      entry.summaries.push(summariseMeasurement(definition.kind, m));
      entry.done.push(m.jobs);
      rounds.set(contender, entry);
    }
  }

  const results: CaseResult[] = [];
  const rows: Record<string, RowSettings> = {};
  for (const contender of contenders) {
    const entry = rounds.get(contender);
    const size = sized.get(contender);
    if (entry === undefined || size === undefined || !alive.has(contender)) continue;
    const impl = contender.driver.impl;
    const summary = summariseRounds(entry.summaries);
    const row: RowSettings = { count: size.count, rounds: entry.summaries.length, done: entry.done };
    if (size.reduced) row.reduced = true;
    rows[impl] = row;
    results.push({
      case: definition.name,
      impl,
      kind: definition.kind === 'throughput' ? 'burst' : 'async',
      callers: 1,
      summary,
      batchOps: size.count,
      samples: entry.done.reduce((sum, n) => sum + n, 0),
      note: noteOf(definition, row, roundsOf(definition, scale)),
    });
    log(
      `${definition.name} / ${impl}: ${Math.round(summary.opsPerSec).toLocaleString('en-US')} /s, ` +
        `p50 ${summary.p50Ms.toPrecision(3)} ms (count ${size.count}, done ${entry.done.join(', ')})`,
    );
  }
  return { results, rows, failed };
}

const roundUp = (n: number, step: number) => Math.max(step, Math.ceil(n / step) * step);

/** Says where a row departs from the suite's counts. */
function noteOf(
  definition: Pick<RunnableCase<unknown, unknown>, 'kind'>,
  row: RowSettings,
  rounds: number,
): string | undefined {
  const notes: string[] = [];
  if (row.reduced)
    notes.push(`${row.count.toLocaleString('en-US')} jobs per round (sized to the warm-up's rate)`);
  const short = row.done.filter((done) => done < row.count);
  if (definition.kind === 'redelivery' && short.length > 0) {
    notes.push(
      `${short.length} of ${row.rounds} rounds not redelivered within the cap (time shown is a lower bound)`,
    );
  } else if (definition.kind === 'latency' && short.length > 0) {
    notes.push(`samples per round ${row.done.join(', ')} of ${row.count} (time cap)`);
  } else if (short.length > 0) {
    notes.push(`time cap ended ${short.length} of ${row.rounds} rounds early (done ${row.done.join(', ')})`);
  }
  if (row.rounds < rounds) notes.push(`${row.rounds} of ${rounds} rounds`);
  return notes.length > 0 ? notes.join('; ') : undefined;
}
