import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildResults, describeMachine } from '../../report.js';
import { prepareEventStore } from '../eventstore.js';
import type { Scale } from '../messaging/cases.js';
import { eventStoreCases } from './cases.js';

/** Tiny counts: the test checks that every case runs and the results are well formed, not the numbers. */
const tiny: Scale = {
  jobs: 20,
  latencySamples: 20,
  lockMs: 0,
  rounds: 1,
  redeliveryRounds: 1,
  targetMs: 50,
  capMs: 2000,
  latencyCapMs: 2000,
  warmupJobs: 10,
  warmupCapMs: 300,
};

/**
 * Errors of Emmett's own SQLite driver that end one of its rows now and then (its connections contend for the file:
 * "SQLITE_BUSY: cannot commit transaction - SQL statements in progress"). The bench records such a row as failed;
 * any other failure, and any failure of Stratus, fails the test.
 */
const peerDriverErrors: Record<'sqlite' | 'postgres', RegExp | undefined> = {
  sqlite: /\bSQLITE_(BUSY|ERROR)\b/,
  postgres: undefined,
};

/**
 * Runs `cases` (all when undefined) on one backend, with Stratus and, when `withPeer`, Emmett, and checks the
 * results file. Emmett gets a few cases only: its failures under concurrent writers (SQLite) and its polling
 * consumers take seconds each.
 */
async function runOn(backend: 'sqlite' | 'postgres', withPeer: boolean, cases?: readonly string[]) {
  const stratus = `stratus-${backend}`;
  const peer = `emmett-${backend}`;
  const impls = withPeer ? [stratus, peer] : [stratus];
  const prepared = await prepareEventStore(
    { quick: true, only: cases, log: () => {} },
    { scale: tiny, impls, floors: false },
  );
  try {
    const run = await prepared.run();
    const file = buildResults('eventstore', describeMachine(run.settings), run.results, prepared.counterpart);
    const expected = eventStoreCases
      .filter((c) => (c.backends?.includes(backend) ?? true) && (cases?.includes(c.name) ?? true))
      .map((c) => c.name);
    // Stratus runs every case of its backend and never fails one.
    assert.deepEqual(
      file.results.filter((row) => row.impl === stratus).map((row) => row.case),
      expected,
    );
    // Every case ends in a row or a failure of Emmett's own driver; nothing else is skipped.
    const peerFailures = run.skipped.filter((entry) => entry.includes(` / ${peer}: `));
    assert.deepEqual(
      run.skipped.filter((entry) => !peerFailures.includes(entry)),
      [],
    );
    const allowed = peerDriverErrors[backend];
    for (const entry of peerFailures) assert.ok(allowed?.test(entry), `unexpected failure: ${entry}`);
    for (const row of file.results) {
      assert.ok(impls.includes(row.impl), row.impl);
      assert.ok(Number.isFinite(row.opsPerSec) && row.opsPerSec > 0, `${row.case}/${row.impl} ops/s`);
      assert.ok(row.p50Ms >= 0 && row.p99Ms >= row.p50Ms, `${row.case}/${row.impl} percentiles`);
    }
    const peerRows = file.results.filter((row) => row.impl === peer);
    assert.equal(peerRows.length + peerFailures.length, withPeer ? expected.length : 0);
    for (const row of peerRows) {
      const versus = file.results.find((r) => r.case === row.case && r.impl === stratus);
      const ratio = Number(((versus?.opsPerSec ?? 0) / row.opsPerSec).toPrecision(3));
      assert.equal(file.ratios[row.case]?.[peer], ratio);
    }
    const settings = file.machine.settings as Record<string, unknown>;
    assert.ok(Array.isArray(settings.loadAverageAtStart));
    assert.deepEqual(Object.keys(file), ['suite', 'machine', 'results', 'ratios']);
  } finally {
    await prepared.close();
  }
}

const postgresSkip = process.env.DATABASE_URL
  ? false
  : (process.env.STRATUS_TEST_POSTGRES_UNAVAILABLE ?? 'no DATABASE_URL (the test runner provides one)');

describe('eventstore suite, tiny counts', () => {
  it('runs every SQLite case with Stratus', () => runOn('sqlite', false));

  it('sets Emmett on SQLite beside Stratus', () =>
    runOn('sqlite', true, ['append-new-stream', 'append-batch-100', 'read-stream-10', 'catch-up']));

  it('runs every PostgreSQL case with Stratus', { skip: postgresSkip }, () => runOn('postgres', false));

  it('sets Emmett on PostgreSQL beside Stratus', { skip: postgresSkip }, () =>
    runOn('postgres', true, ['append-new-stream', 'read-stream-10']),
  );
});
