/** Small statistics over benchmark samples. Pure functions, so the harness test can pin them down exactly. */

/**
 * The p-th percentile (0 ≤ p ≤ 100) of `values`, by linear interpolation between the closest ranks (the
 * "type 7" definition used by R, NumPy and spreadsheets). Throws on an empty list.
 */
export function percentile(values: readonly number[], p: number): number {
  return percentileOfSorted(
    [...values].sort((a, b) => a - b),
    p,
  );
}

/** `percentile` of values already in ascending order (a typed array of millions of latencies, say). */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) throw new RangeError('percentile of an empty list');
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be in 0..100, got ${p}`);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low] as number;
  return lowValue + ((sorted[high] as number) - lowValue) * (rank - low);
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * One timed batch: `ops` operations took `ms` milliseconds: the batch's wall clock, or with per-call timing
 * the sum of its calls' own times divided by the number of concurrent callers (the time each caller spent).
 */
export interface BatchSample {
  readonly ops: number;
  readonly ms: number;
}

export interface RoundSummary {
  /** Total operations ÷ total time of the round's batches. */
  readonly opsPerSec: number;
  /** Percentiles of the per-op latency: of every call's own time, or batch-averaged (see `summariseRound`). */
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/**
 * Summarises one round of batches. `callers` is how many callers shared each batch: with 32 concurrent
 * callers a batch of 3,200 ops is 100 sequential ops per caller, so the per-op latency a caller saw is the
 * batch time ÷ 100, not ÷ 3,200.
 *
 * `latencies` (per-call timing): the time of every call of the round, in ms; sorted in place. The
 * percentiles are then those of the calls themselves; without it, of the batch-averaged per-op latency.
 */
export function summariseRound(
  samples: readonly BatchSample[],
  callers = 1,
  latencies?: Float64Array,
): RoundSummary {
  if (samples.length === 0) throw new RangeError('a round needs at least one sample');
  let ops = 0;
  let ms = 0;
  const perOp: number[] = [];
  for (const sample of samples) {
    ops += sample.ops;
    ms += sample.ms;
    perOp.push(sample.ms / (sample.ops / callers));
  }
  const opsPerSec = (ops / ms) * 1000;
  if (latencies === undefined) {
    return { opsPerSec, p50Ms: percentile(perOp, 50), p99Ms: percentile(perOp, 99) };
  }
  // A typed array sorts numerically, natively: fast enough for the millions of calls of a round.
  latencies.sort();
  return { opsPerSec, p50Ms: percentileOfSorted(latencies, 50), p99Ms: percentileOfSorted(latencies, 99) };
}

export interface CaseSummary extends RoundSummary {
  /** Lowest and highest round ops/s: the spread the median hides. */
  readonly minOpsPerSec: number;
  readonly maxOpsPerSec: number;
  readonly rounds: number;
}

/** The median of each figure over the rounds (taken separately), plus the ops/s range. */
export function summariseRounds(rounds: readonly RoundSummary[]): CaseSummary {
  if (rounds.length === 0) throw new RangeError('no rounds to summarise');
  const opsPerSec = rounds.map((r) => r.opsPerSec);
  return {
    opsPerSec: median(opsPerSec),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    minOpsPerSec: Math.min(...opsPerSec),
    maxOpsPerSec: Math.max(...opsPerSec),
    rounds: rounds.length,
  };
}

/** Stratus ops/s ÷ peer ops/s: above 1 means Stratus is faster. Rounded to 3 significant digits. */
export function ratio(stratusOpsPerSec: number, peerOpsPerSec: number): number {
  if (!(peerOpsPerSec > 0)) throw new RangeError(`peer ops/s must be positive, got ${peerOpsPerSec}`);
  return Number((stratusOpsPerSec / peerOpsPerSec).toPrecision(3));
}
