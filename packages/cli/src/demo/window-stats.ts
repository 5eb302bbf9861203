/** Outcomes of the demo's calls, counted per reporting window and in total. */
export type CallOutcome = 'ok' | 'failed' | 'timeout' | 'broken-circuit' | 'throttled';

export const callOutcomes: readonly CallOutcome[] = [
  'ok',
  'failed',
  'timeout',
  'broken-circuit',
  'throttled',
];

export interface WindowReport {
  readonly seconds: number;
  readonly counts: Readonly<Record<CallOutcome, number>>;
  readonly retries: number;
  readonly callsPerSecond: number;
  /** Latency percentiles of successful calls in the window, undefined when there were none. */
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
}

function zeroCounts(): Record<CallOutcome, number> {
  return { ok: 0, failed: 0, timeout: 0, 'broken-circuit': 0, throttled: 0 };
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[rank];
}

export class WindowStats {
  #window = zeroCounts();
  #latencies: number[] = [];
  #retries = 0;
  #windowStart: number;
  readonly totals = zeroCounts();
  totalRetries = 0;

  constructor(now: number) {
    this.#windowStart = now;
  }

  record(outcome: CallOutcome, latencyMs: number): void {
    this.#window[outcome]++;
    this.totals[outcome]++;
    if (outcome === 'ok') this.#latencies.push(latencyMs);
  }

  recordRetry(): void {
    this.#retries++;
    this.totalRetries++;
  }

  /** Closes the current window and starts the next one. */
  roll(now: number): WindowReport {
    const seconds = Math.max(1e-3, (now - this.#windowStart) / 1000);
    const sorted = this.#latencies.sort((a, b) => a - b);
    const counts = this.#window;
    const calls = callOutcomes.reduce((sum, outcome) => sum + counts[outcome], 0);
    const report: WindowReport = {
      seconds,
      counts,
      retries: this.#retries,
      callsPerSecond: calls / seconds,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
    };
    this.#window = zeroCounts();
    this.#latencies = [];
    this.#retries = 0;
    this.#windowStart = now;
    return report;
  }
}
