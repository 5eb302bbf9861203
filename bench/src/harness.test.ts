import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  type BenchCase,
  type CaseResult,
  groupByCase,
  type HarnessSettings,
  LatencyLog,
  runCases,
} from './harness.js';
import {
  buildResults,
  computeRatios,
  describeMachine,
  formatTable,
  overheadNs,
  type ResultRow,
  writeResults,
} from './report.js';
import { median, percentile, percentileOfSorted, ratio, summariseRound, summariseRounds } from './stats.js';

/** Tiny budgets: the test checks the mechanics, not the numbers. */
const fast: HarnessSettings = {
  rounds: 3,
  warmupMs: 2,
  targetBatchMs: 0.2,
  roundBudgetMs: 1,
  burstRoundBudgetMs: 1,
  minSamples: 3,
  maxSamples: 3,
  minBurstSamples: 1,
  maxBurstSamples: 1,
};

const noGc = { collect: () => {}, how: 'test' };

describe('percentile', () => {
  it('interpolates linearly between the closest ranks', () => {
    const values = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
    assert.equal(percentile(values, 0), 1);
    assert.equal(percentile(values, 100), 10);
    assert.equal(percentile(values, 50), 5.5);
    assert.equal(median([3, 1, 2]), 2);
    assert.ok(Math.abs(percentile([1, 2, 3, 4], 99) - 3.97) < 1e-12);
    assert.equal(percentile([7], 99), 7);
  });

  it('rejects an empty list and a percentile outside 0..100', () => {
    assert.throws(() => percentile([], 50), RangeError);
    assert.throws(() => percentile([1], 101), RangeError);
    assert.throws(() => percentile([1], Number.NaN), RangeError);
  });

  it('reads a sorted typed array as it is', () => {
    const sorted = Float64Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
    assert.equal(percentileOfSorted(sorted, 50), 5.5);
    assert.equal(percentileOfSorted(sorted, 100), 10);
    assert.throws(() => percentileOfSorted(new Float64Array(0), 50), RangeError);
  });

  it('does not reorder its input', () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    assert.deepEqual(values, [3, 1, 2]);
  });
});

describe('round and case summaries', () => {
  it('takes ops/s from totals and latencies per op from each batch', () => {
    const round = summariseRound([
      { ops: 100, ms: 1 },
      { ops: 100, ms: 3 },
    ]);
    assert.equal(round.opsPerSec, 50_000);
    assert.ok(Math.abs(round.p50Ms - 0.02) < 1e-12);
    assert.ok(Math.abs(round.p99Ms - 0.0298) < 1e-12);
  });

  it('divides a shared batch among its concurrent callers for the per-op latency', () => {
    const round = summariseRound([{ ops: 320, ms: 10 }], 32);
    assert.equal(round.opsPerSec, 32_000);
    assert.equal(round.p50Ms, 1);
  });

  it('takes the percentiles of every call when the per-call latencies are given', () => {
    // Per-call timing: each batch counts the sum of its calls' times; 9 calls of 1 ms and one of 11 ms.
    const latencies = Float64Array.of(1, 1, 11, 1, 1, 1, 1, 1, 1, 1);
    const round = summariseRound(
      [
        { ops: 5, ms: 15 },
        { ops: 5, ms: 5 },
      ],
      1,
      latencies,
    );
    assert.equal(round.opsPerSec, 500);
    assert.equal(round.p50Ms, 1);
    assert.ok(Math.abs(round.p99Ms - 10.1) < 1e-12);
    // Sorted in place: the log is scratch space.
    assert.deepEqual([...latencies], [1, 1, 1, 1, 1, 1, 1, 1, 1, 11]);
    // Batch averages of the same round (3 ms and 1 ms per op) hide the 11 ms call.
    assert.ok(
      summariseRound([
        { ops: 5, ms: 15 },
        { ops: 5, ms: 5 },
      ]).p99Ms < 3,
    );
  });

  it('reports the median round and the range', () => {
    const summary = summariseRounds([
      { opsPerSec: 300, p50Ms: 3, p99Ms: 30 },
      { opsPerSec: 100, p50Ms: 1, p99Ms: 10 },
      { opsPerSec: 200, p50Ms: 2, p99Ms: 20 },
    ]);
    assert.deepEqual(summary, {
      opsPerSec: 200,
      p50Ms: 2,
      p99Ms: 20,
      minOpsPerSec: 100,
      maxOpsPerSec: 300,
      rounds: 3,
    });
    assert.throws(() => summariseRounds([]), RangeError);
    assert.throws(() => summariseRound([]), RangeError);
  });
});

describe('ratios', () => {
  it('divides Stratus ops/s by each peer in the same case, to 3 significant digits; none without a peer', () => {
    assert.equal(ratio(3_000_000, 1_000_000), 3);
    assert.equal(ratio(1, 3), 0.333);
    assert.throws(() => ratio(1, 0), RangeError);
    const rows: ResultRow[] = [
      { case: 'retry', impl: 'stratus', opsPerSec: 2_000_000, p50Ms: 0, p99Ms: 0 },
      { case: 'retry', impl: 'cockatiel', opsPerSec: 1_000_000, p50Ms: 0, p99Ms: 0 },
      { case: 'timeout', impl: 'cockatiel', opsPerSec: 40_000, p50Ms: 0, p99Ms: 0 },
      { case: 'timeout', impl: 'stratus', opsPerSec: 600_000, p50Ms: 0, p99Ms: 0 },
      { case: 'timeout', impl: 'other', opsPerSec: 1_200_000, p50Ms: 0, p99Ms: 0 },
      { case: 'bare', impl: 'baseline', opsPerSec: 9_000_000, p50Ms: 0, p99Ms: 0 },
      { case: 'hedging', impl: 'stratus', opsPerSec: 5_000_000, p50Ms: 0, p99Ms: 0 },
    ];
    // A Stratus-only case has no entry.
    assert.deepEqual(computeRatios(rows), {
      retry: { cockatiel: 2 },
      timeout: { cockatiel: 15, other: 0.5 },
    });
  });
});

describe('runCases', () => {
  it('interleaves the implementations of a case, rotating the order every round', async () => {
    const order: string[] = [];
    const collections: number[] = [];
    const recorder = (impl: string): BenchCase => ({
      case: 'burst',
      impl,
      kind: 'burst',
      jobs: 10,
      run: async () => {
        order.push(impl);
      },
    });
    let gcs = 0;
    await runCases([recorder('a'), recorder('b'), recorder('c')], {
      settings: { ...fast, warmupMs: 0 },
      collector: { collect: () => collections.push(gcs++), how: 'test' },
    });
    // One warm-up burst each, then rounds a-b-c, b-c-a, c-a-b.
    assert.deepEqual(order, ['a', 'b', 'c', 'a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b']);
    // A GC before each warm-up and before each measured block.
    assert.equal(collections.length, 3 + 9);
  });

  it('measures async, concurrent, sync and burst cases and summarises each', async () => {
    let concurrentNow = 0;
    let concurrentPeak = 0;
    const cases: BenchCase[] = [
      { case: 'bare', impl: 'baseline', kind: 'async', op: async () => 42 },
      { case: 'add', impl: 'stratus', kind: 'sync', op: () => 1 + 1 },
      {
        case: 'concurrent',
        impl: 'stratus',
        kind: 'async',
        concurrency: 4,
        op: async () => {
          concurrentPeak = Math.max(concurrentPeak, ++concurrentNow);
          await null;
          concurrentNow--;
        },
      },
      { case: 'add', impl: 'peer', kind: 'sync', op: () => 2 + 2, note: () => 'a peer' },
      {
        case: 'jobs',
        impl: 'stratus',
        kind: 'burst',
        jobs: 50,
        run: async () => {
          await Promise.all(Array.from({ length: 50 }, async () => 42));
        },
      },
    ];
    const results = await runCases(cases, { settings: fast, collector: noGc });
    assert.deepEqual(
      results.map((r) => [r.case, r.impl, r.kind, r.callers]),
      [
        ['bare', 'baseline', 'async', 1],
        ['add', 'stratus', 'sync', 1],
        ['add', 'peer', 'sync', 1],
        ['concurrent', 'stratus', 'async', 4],
        ['jobs', 'stratus', 'burst', 1],
      ],
    );
    assert.equal(concurrentPeak, 4);
    for (const r of results) {
      assert.ok(Number.isFinite(r.summary.opsPerSec) && r.summary.opsPerSec > 0, `${r.case}/${r.impl} ops/s`);
      assert.ok(
        r.summary.minOpsPerSec <= r.summary.opsPerSec && r.summary.opsPerSec <= r.summary.maxOpsPerSec,
      );
      assert.ok(r.summary.p50Ms > 0 && r.summary.p50Ms <= r.summary.p99Ms);
      assert.equal(r.summary.rounds, 3);
    }
    assert.equal((results.find((r) => r.case === 'concurrent')?.batchOps ?? 1) % 4, 0);
    assert.equal(results.find((r) => r.case === 'jobs')?.batchOps, 50);
    assert.equal(results.find((r) => r.impl === 'peer')?.note, 'a peer');
  });

  /**
   * A clock that only moves when an op moves it, so every per-call time is known exactly (integral
   * milliseconds: no rounding). Settings sized for it: batches of about 400 ms of calls, 3 per round.
   */
  function scripted() {
    let now = 0;
    const advance = (ms: number) => {
      now += ms;
    };
    return { clock: { now: () => now }, advance };
  }
  const scriptedSettings: HarnessSettings = { ...fast, warmupMs: 50, targetBatchMs: 400, roundBudgetMs: 1 };

  it('times every call on its own with per-call timing: ops/s from their sum, percentiles from each', async () => {
    const { clock, advance } = scripted();
    let calls = 0;
    // Every 10th call takes 11 ms, the others 1 ms: 2 ms per call on average.
    const tail = () => advance(calls++ % 10 === 9 ? 11 : 1);
    const cases: BenchCase[] = [
      { case: 'steady', impl: 'stratus', kind: 'async', op: async () => advance(2) },
      { case: 'tail', impl: 'stratus', kind: 'async', op: async () => tail() },
      { case: 'sync', impl: 'stratus', kind: 'sync', op: () => advance(4) },
      { case: 'jobs', impl: 'stratus', kind: 'burst', jobs: 10, run: async () => advance(50) },
    ];
    const perCall = await runCases(cases, {
      settings: scriptedSettings,
      timing: 'per-call',
      clock,
      collector: noGc,
    });
    const summary = (c: string, results: CaseResult[]) => results.find((r) => r.case === c)?.summary;
    assert.deepEqual(
      { ...summary('steady', perCall) },
      { opsPerSec: 500, p50Ms: 2, p99Ms: 2, minOpsPerSec: 500, maxOpsPerSec: 500, rounds: 3 },
    );
    const tailed = summary('tail', perCall);
    assert.equal(tailed?.p50Ms, 1);
    assert.equal(tailed?.p99Ms, 11);
    // A round need not hold a whole number of 10-call periods: within one period's worth of the mean.
    assert.ok(Math.abs((tailed?.opsPerSec ?? 0) - 500) < 25, `${tailed?.opsPerSec}`);
    assert.ok(Math.abs((summary('sync', perCall)?.opsPerSec ?? 0) - 250) < 1e-9);
    assert.equal(summary('sync', perCall)?.p99Ms, 4);
    // Bursts keep the wall clock of the whole burst: 50 ms for 10 jobs.
    assert.equal(summary('jobs', perCall)?.opsPerSec, 200);
    assert.equal(summary('jobs', perCall)?.p50Ms, 5);

    // Batch timing of the same calls: the same throughput (this clock costs nothing to read), but its
    // batch-averaged latencies hide the 11 ms calls.
    const batch = await runCases(cases, { settings: scriptedSettings, clock, collector: noGc });
    assert.equal(summary('steady', batch)?.opsPerSec, 500);
    assert.ok(Math.abs((summary('tail', batch)?.opsPerSec ?? 0) - 500) < 25);
    assert.ok((summary('tail', batch)?.p99Ms ?? 11) < 2.2);
  });

  it('gives concurrent callers the latency each saw and the throughput of all of them', async () => {
    const { clock, advance } = scripted();
    // Each call moves the clock 1 ms, then yields: while one caller waits, the 3 others each make a call.
    const op = async () => {
      advance(1);
      await null;
    };
    const [result] = await runCases([{ case: 'c4', impl: 'stratus', kind: 'async', concurrency: 4, op }], {
      settings: scriptedSettings,
      timing: 'per-call',
      clock,
      collector: noGc,
    });
    assert.equal(result?.summary.p50Ms, 4);
    // 1 call per ms of clock in all (the last calls of a batch wait for fewer others: slightly above).
    const opsPerSec = result?.summary.opsPerSec ?? 0;
    assert.ok(opsPerSec >= 1000 && opsPerSec < 1020, `${opsPerSec}`);
  });

  it('refuses two cases with the same case and implementation', () => {
    const op = async () => 42;
    assert.throws(
      () =>
        groupByCase([
          { case: 'x', impl: 'a', kind: 'async', op },
          { case: 'x', impl: 'a', kind: 'async', op },
        ]),
      /duplicate case x\/a/,
    );
  });
});

describe('LatencyLog', () => {
  it('grows keeping what it holds, sums a range and shows what is logged', () => {
    const log = new LatencyLog();
    assert.equal(log.room, 0);
    log.reserve(2);
    log.buffer.set([3, 4]);
    log.length = 2;
    log.reserve(5);
    assert.equal(log.room, 3);
    assert.deepEqual([...log.view()], [3, 4]);
    assert.equal(log.sum(0, 2), 7);
    assert.equal(log.sum(1, 1), 4);
    log.reserve(1);
    assert.equal(log.buffer.length, 5);
    log.clear();
    assert.equal(log.view().length, 0);
    assert.equal(log.room, 5);
  });
});

describe('results file', () => {
  const fake = (c: string, impl: string, opsPerSec: number): CaseResult => ({
    case: c,
    impl,
    kind: 'async',
    callers: 1,
    summary: {
      opsPerSec,
      p50Ms: 1000 / opsPerSec,
      p99Ms: 2000 / opsPerSec,
      minOpsPerSec: opsPerSec * 0.9,
      maxOpsPerSec: opsPerSec * 1.1,
      rounds: 3,
    },
    batchOps: 1000,
    samples: 30,
    note: undefined,
  });
  const results = [
    fake('bare', 'baseline', 10_000_000),
    fake('retry', 'stratus', 5_000_000.4),
    fake('retry', 'cockatiel', 2_000_000),
  ];

  it('has exactly the agreed shape', () => {
    const file = buildResults('resilience', describeMachine({ payload: 'async () => 42' }), results);
    assert.deepEqual(Object.keys(file), ['suite', 'machine', 'results', 'ratios']);
    assert.equal(file.suite, 'resilience');
    for (const row of file.results)
      assert.deepEqual(Object.keys(row), ['case', 'impl', 'opsPerSec', 'p50Ms', 'p99Ms']);
    assert.deepEqual(file.results[1], {
      case: 'retry',
      impl: 'stratus',
      opsPerSec: 5_000_000,
      p50Ms: 0.0002,
      p99Ms: 0.0004,
    });
    assert.deepEqual(file.ratios, { retry: { cockatiel: 2.5 } });
    for (const key of ['cpu', 'cores', 'memoryGiB', 'node', 'os', 'settings'])
      assert.ok(key in file.machine, key);
    assert.equal(file.machine.node, process.version);
    assert.deepEqual(file.machine.settings, { payload: 'async () => 42' });
  });

  it('writes JSON that reads back the same', () => {
    const dir = mkdtempSync(join(tmpdir(), 'stratus-bench-test-'));
    try {
      const file = buildResults('resilience', describeMachine({}), results);
      const path = join(dir, 'results', 'resilience.json');
      writeResults(path, file);
      assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), file);
    } finally {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    }
  });

  it('prints every row, the ratio on peer rows and the overhead over the bare call', () => {
    const file = buildResults('resilience', describeMachine({}), results);
    const table = formatTable(results, file);
    assert.match(table, /retry\s+cockatiel\s+2\.00 M\s+1\.80 M – 2\.20 M.*\s2\.50x$/m);
    assert.match(table, /retry\s+stratus\s+5\.00 M/);
    assert.equal(Math.round(overheadNs(results[1] as CaseResult, results[0]) ?? 0), 100);
    assert.equal(overheadNs(results[0] as CaseResult, results[0]), undefined);
  });
});
