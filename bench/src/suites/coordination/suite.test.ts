import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildResults, describeMachine } from '../../report.js';
import { coordinationCounterpart, prepareCoordination } from '../coordination.js';
import type { CoordinationScale } from './cases.js';

/** Tiny counts: the test checks that the cases run and the results are well formed, not the numbers. */
const tiny: CoordinationScale = {
  jobs: 20,
  latencySamples: 0,
  lockMs: 0,
  rounds: 1,
  redeliveryRounds: 1,
  targetMs: 50,
  capMs: 2000,
  latencyCapMs: 0,
  warmupJobs: 10,
  warmupCapMs: 300,
  // The first kill comes once the five candidates are up; the run then ends after its failover.
  failoverMs: 1,
};

/** Runs `cases` with `impls` and checks that every (case, impl) pair has a sane row and peers have ratios. */
async function run(cases: readonly string[], impls: readonly string[], expected: readonly string[][]) {
  const prepared = await prepareCoordination(
    { quick: true, only: cases, log: () => {} },
    { scale: tiny, impls, floors: false },
  );
  try {
    const outcome = await prepared.run();
    assert.deepEqual(outcome.skipped, []);
    const file = buildResults(
      'coordination',
      describeMachine(outcome.settings),
      outcome.results,
      prepared.counterpart,
    );
    assert.deepEqual(
      file.results.map((row) => [row.case, row.impl]),
      expected,
    );
    for (const row of file.results) {
      assert.ok(Number.isFinite(row.opsPerSec) && row.opsPerSec > 0, `${row.case}/${row.impl} ops/s`);
      assert.ok(row.p50Ms > 0 && row.p99Ms >= row.p50Ms, `${row.case}/${row.impl} percentiles`);
      const stratus = coordinationCounterpart(row.impl);
      if (stratus === row.impl) continue;
      const versus = file.results.find((r) => r.case === row.case && r.impl === stratus);
      assert.equal(
        file.ratios[row.case]?.[row.impl],
        Number(((versus?.opsPerSec ?? 0) / row.opsPerSec).toPrecision(3)),
      );
    }
    assert.deepEqual(Object.keys(file), ['suite', 'machine', 'results', 'ratios']);
    return outcome;
  } finally {
    await prepared.close();
  }
}

const postgresSkip = process.env.DATABASE_URL
  ? false
  : (process.env.STRATUS_TEST_POSTGRES_UNAVAILABLE ?? 'no DATABASE_URL (the test runner provides one)');
const redisSkip = process.env.REDIS_URL ? false : 'no REDIS_URL (the test runner provides one)';

// Concurrently: the failover case spends its seconds starting candidate processes, the others need little CPU.
describe('coordination suite, tiny counts', { concurrency: true }, () => {
  it('runs workflows and locks on SQLite', async () => {
    await run(
      ['workflow-c1', 'workflow-c32', 'lock-uncontended', 'lock-contended-c8'],
      ['stratus-sqlite'],
      [
        ['workflow-c1', 'stratus-sqlite'],
        ['workflow-c32', 'stratus-sqlite'],
        ['lock-uncontended', 'stratus-sqlite'],
        ['lock-contended-c8', 'stratus-sqlite'],
      ],
    );
  });

  it('times a leader failover on SQLite through the chaos fixture', async () => {
    const outcome = await run(
      ['leader-failover'],
      ['stratus-sqlite'],
      [['leader-failover', 'stratus-sqlite']],
    );
    const failover = outcome.results[0];
    // A successor cannot be elected before the killed leader's lease could have run out (2 s, renewed every 0.5 s).
    assert.ok(failover !== undefined && failover.summary.p50Ms >= 1000, `${failover?.summary.p50Ms} ms`);
    assert.match(failover.note ?? '', /target p99 ≤ lease \+ 1 s: (met|MISSED)/);
  });

  it('sets DBOS beside Stratus on PostgreSQL, and contends for a PostgreSQL lock', {
    skip: postgresSkip,
  }, async () => {
    await run(
      ['workflow-c1', 'lock-contended-c8'],
      ['stratus-postgres', 'dbos'],
      [
        ['workflow-c1', 'stratus-postgres'],
        ['workflow-c1', 'dbos'],
        ['lock-contended-c8', 'stratus-postgres'],
      ],
    );
  });

  it('sets redlock and redis-semaphore beside Stratus on Redis', { skip: redisSkip }, async () => {
    await run(
      ['lock-uncontended', 'lock-contended-c8'],
      ['stratus-redis', 'redlock', 'redis-semaphore'],
      ['lock-uncontended', 'lock-contended-c8'].flatMap((name) =>
        ['stratus-redis', 'redlock', 'redis-semaphore'].map((impl) => [name, impl]),
      ),
    );
  });
});
