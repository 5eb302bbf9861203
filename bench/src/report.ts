/** The results file and the printed table. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, release as osRelease, type as osType, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { CaseResult } from './harness.js';
import { ratio } from './stats.js';

/** The implementation every other implementation of a case is compared with. */
export const STRATUS = 'stratus';

export interface ResultRow {
  readonly case: string;
  readonly impl: string;
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** `bench/results/<suite>.json`. */
export interface ResultsFile {
  readonly suite: string;
  readonly machine: Record<string, unknown>;
  readonly results: ResultRow[];
  /** ratios[case][peer] = Stratus ops/s ÷ peer ops/s, for every case with a Stratus implementation and a peer. */
  readonly ratios: Record<string, Record<string, number>>;
}

/**
 * The Stratus implementation a row is compared with, or undefined for none. By default every row is compared
 * with the one named "stratus"; a suite with a Stratus row per backend (messaging) compares each peer with
 * Stratus on the peer's backend. A row that is its own counterpart is a Stratus row.
 */
export type Counterpart = (impl: string) => string | undefined;

const sameStratus: Counterpart = () => STRATUS;

/** The box and the runtime, plus the suite's settings, so a results file says what produced it. */
export function describeMachine(settings: Record<string, unknown>): Record<string, unknown> {
  const cpuList = cpus();
  return {
    cpu: cpuList[0]?.model.trim() ?? 'unknown',
    cores: cpuList.length,
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    freeMemoryGiB: Number((freemem() / 2 ** 30).toFixed(1)),
    node: process.version,
    v8: process.versions.v8,
    os: `${osType()} ${osRelease()} ${process.arch}`,
    // Over the run's last 1, 5 and 15 minutes: other work on a 2-core box moves every number.
    loadAverage: loadavg().map((l) => Number(l.toFixed(2))),
    date: new Date().toISOString(),
    settings,
  };
}

const significant = (value: number, digits: number) => Number(value.toPrecision(digits));

/**
 * Ratios of the Stratus implementation of each case against each peer in it (median ops/s of each): the peer's
 * counterpart (see `Counterpart`) in the same case.
 */
export function computeRatios(
  rows: readonly ResultRow[],
  counterpart: Counterpart = sameStratus,
): Record<string, Record<string, number>> {
  const ratios: Record<string, Record<string, number>> = {};
  for (const peer of rows) {
    const stratusImpl = counterpart(peer.impl);
    if (stratusImpl === undefined || stratusImpl === peer.impl) continue;
    const stratus = rows.find((row) => row.case === peer.case && row.impl === stratusImpl);
    // A Stratus-only case (no peer) has no ratio to give, nor a peer without its Stratus row.
    if (stratus === undefined) continue;
    ratios[peer.case] = { ...ratios[peer.case], [peer.impl]: ratio(stratus.opsPerSec, peer.opsPerSec) };
  }
  return ratios;
}

export function buildResults(
  suite: string,
  machine: Record<string, unknown>,
  results: readonly CaseResult[],
  counterpart?: Counterpart,
): ResultsFile {
  const rows = results.map(
    (r): ResultRow => ({
      case: r.case,
      impl: r.impl,
      // Whole numbers, except the slow rates of time-to-event cases (a 5 s redelivery is 0.2/s).
      opsPerSec:
        r.summary.opsPerSec >= 100 ? Math.round(r.summary.opsPerSec) : significant(r.summary.opsPerSec, 3),
      p50Ms: significant(r.summary.p50Ms, 4),
      p99Ms: significant(r.summary.p99Ms, 4),
    }),
  );
  return { suite, machine, results: rows, ratios: computeRatios(rows, counterpart) };
}

export function writeResults(path: string, file: ResultsFile): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`);
}

/** 1234567 → "1.23 M", 45300 → "45.3 k". */
export function formatRate(opsPerSec: number): string {
  if (opsPerSec >= 1e6) return `${(opsPerSec / 1e6).toFixed(2)} M`;
  if (opsPerSec >= 1e3) return `${(opsPerSec / 1e3).toFixed(1)} k`;
  if (opsPerSec < 10) return opsPerSec.toPrecision(3);
  return opsPerSec.toFixed(0);
}

const formatMs = (ms: number) => (ms >= 1 ? ms.toFixed(2) : ms.toPrecision(3));

/**
 * The case whose plain `await op()` is the ceiling. Sequential async rows show their overhead over it in
 * ns per call: unlike ops/s, that figure is additive (a pipeline costs about the sum of its policies).
 */
export const BASELINE_CASE = 'bare';

/** The extra nanoseconds per call over the baseline, for sequential async cases; undefined otherwise. */
export function overheadNs(result: CaseResult, baseline: CaseResult | undefined): number | undefined {
  if (baseline === undefined || result === baseline || result.kind !== 'async' || result.callers !== 1) {
    return undefined;
  }
  return 1e9 / result.summary.opsPerSec - 1e9 / baseline.summary.opsPerSec;
}

/**
 * A plain-text table: one row per case and implementation, peers showing Stratus ÷ their ops/s. The "ns/op over
 * bare" column is shown when there is a baseline case to measure it against.
 */
export function formatTable(results: readonly CaseResult[], file: ResultsFile): string {
  const baseline = results.find((r) => r.case === BASELINE_CASE);
  const overheadColumn = baseline === undefined ? [] : ['ns/op over bare'];
  const header = [
    'case',
    'impl',
    'ops/s',
    'range (rounds)',
    'p50 ms',
    'p99 ms',
    ...overheadColumn,
    'stratus ÷ impl',
  ];
  const lines: string[][] = [header];
  for (const r of results) {
    const s = r.summary;
    const versus = file.ratios[r.case]?.[r.impl];
    const overhead = overheadNs(r, baseline);
    lines.push([
      r.case,
      r.impl,
      formatRate(s.opsPerSec),
      `${formatRate(s.minOpsPerSec)} – ${formatRate(s.maxOpsPerSec)}`,
      formatMs(s.p50Ms),
      formatMs(s.p99Ms),
      ...(baseline === undefined ? [] : [overhead === undefined ? '' : overhead.toFixed(0)]),
      versus === undefined ? '' : `${versus.toFixed(2)}x`,
    ]);
  }
  const widths = header.map((_, col) => Math.max(...lines.map((line) => (line[col] ?? '').length)));
  const render = (line: string[]) =>
    line
      .map((cell, col) => (col >= 2 ? cell.padStart(widths[col] ?? 0) : cell.padEnd(widths[col] ?? 0)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const [head, ...body] = lines;
  const out = [render(head ?? header), rule];
  let previous: string | undefined;
  for (const line of body) {
    if (previous !== undefined && line[0] !== previous) out.push('');
    previous = line[0];
    out.push(render(line));
  }
  const notes = results.filter((r) => r.note).map((r) => `* ${r.case} / ${r.impl}: ${r.note}`);
  return [...out, ...(notes.length > 0 ? ['', ...notes] : [])].join('\n');
}
