import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { computeRatios, type ResultRow } from '../../report.js';
import { type CaseDefinition, messagingCases, type Scale } from './cases.js';
import type { Driver, JobData, OnJob, QueueUnderTest } from './driver.js';
import { stratusCounterpart } from './implementations.js';
import { type Contender, runCase, summariseMeasurement } from './runner.js';

/** Tiny counts: the test checks the mechanics, not the numbers. */
const tiny: Scale = {
  jobs: 200,
  latencySamples: 5,
  lockMs: 100,
  rounds: 3,
  redeliveryRounds: 1,
  targetMs: 100,
  capMs: 1000,
  latencyCapMs: 500,
  warmupJobs: 20,
  warmupCapMs: 200,
};

/** An in-process queue; `addDelayMs` makes a slow implementation. */
function fakeDriver(impl: string, log: string[], addDelayMs = 0): Driver {
  return {
    impl,
    backend: 'redis',
    description: {},
    redelivery: { skip: 'fake' },
    async openQueue(name): Promise<QueueUnderTest> {
      log.push(`${impl} ${name}`);
      const jobs: JobData[] = [];
      let wake: (() => void) | undefined;
      const add = async (data: JobData) => {
        if (addDelayMs > 0) await sleep(addDelayMs);
        jobs.push(data);
        wake?.();
      };
      return {
        add,
        async addBulk(batch) {
          for (const data of batch) jobs.push(data);
          wake?.();
        },
        async consume(_options, onJob: OnJob) {
          let running = true;
          const loop = (async () => {
            while (running) {
              const job = jobs.shift();
              if (job !== undefined) await onJob(job);
              else await new Promise<void>((resolve) => (wake = resolve));
            }
          })();
          return {
            async stop() {
              running = false;
              wake?.();
              await loop;
            },
          };
        },
        async dispose() {},
      };
    },
    async close() {},
  };
}

const contender = (driver: Driver): Contender => ({
  driver,
  spec: { impl: driver.impl, connection: {} },
  afterEach: async () => {},
});

const definition = (name: string) => messagingCases.find((c) => c.name === name) as CaseDefinition;

let serial = 0;
const options = { scale: tiny, log: () => {}, nextName: () => `q${++serial}` };

describe('messaging runner', () => {
  it('warms every implementation up, then rotates their order each round on fresh queues', async () => {
    const log: string[] = [];
    // A target far above what 200 in-process jobs take, so a slow warm-up on a busy host cannot shrink the rounds.
    const outcome = await runCase(
      definition('process-c1'),
      [contender(fakeDriver('a', log)), contender(fakeDriver('b', log))],
      { ...options, scale: { ...tiny, targetMs: 60_000 } },
    );
    assert.deepEqual(
      log.map((line) => line.split(' ')[0]),
      ['a', 'b', 'a', 'b', 'b', 'a', 'a', 'b'],
    );
    assert.equal(new Set(log.map((line) => line.split(' ')[1])).size, log.length, 'a fresh queue each time');
    assert.deepEqual(
      outcome.results.map((r) => [r.case, r.impl, r.batchOps, r.summary.rounds]),
      [
        ['process-c1', 'a', 200, 3],
        ['process-c1', 'b', 200, 3],
      ],
    );
    assert.deepEqual(outcome.rows.a, { count: 200, rounds: 3, done: [200, 200, 200] });
    assert.deepEqual(outcome.failed, []);
  });

  it('gives a slow implementation fewer jobs and says so', async () => {
    const outcome = await runCase(definition('add-one'), [contender(fakeDriver('slow', [], 2))], options);
    const row = outcome.rows.slow;
    assert.ok(row !== undefined && row.reduced === true && row.count < tiny.jobs && row.count % 10 === 0);
    assert.match(outcome.results[0]?.note ?? '', /jobs per round \(sized to the warm-up's rate\)/);
  });

  it('reports an implementation that fails instead of stopping the run', async () => {
    const broken: Driver = {
      ...fakeDriver('broken', []),
      openQueue: () => Promise.reject(new Error('no server')),
    };
    const outcome = await runCase(
      definition('add-bulk'),
      [contender(broken), contender(fakeDriver('ok', []))],
      options,
    );
    assert.deepEqual(
      outcome.results.map((r) => r.impl),
      ['ok'],
    );
    assert.deepEqual(outcome.failed, ['add-bulk / broken: no server']);
  });

  it('measures idle latency from the time in the payload', async () => {
    const outcome = await runCase(definition('latency-idle'), [contender(fakeDriver('a', []))], options);
    assert.deepEqual(outcome.rows.a?.done, [5, 5, 5]);
    assert.ok((outcome.results[0]?.summary.p50Ms ?? -1) >= 0);
  });
});

describe('messaging figures', () => {
  it('reads time-to-event cases as 1000 ÷ the mean time, throughput as jobs ÷ wall clock', () => {
    const latency = summariseMeasurement('latency', { jobs: 2, ms: 100, latencies: [1, 3], capped: false });
    assert.deepEqual(latency, { opsPerSec: 500, p50Ms: 2, p99Ms: 2.98 });
    const processed = summariseMeasurement('throughput', {
      jobs: 1000,
      ms: 100,
      latencies: [],
      capped: false,
    });
    assert.deepEqual(processed, { opsPerSec: 10_000, p50Ms: 0.1, p99Ms: 0.1 });
  });

  it("compares each peer with Stratus on the peer's backend", () => {
    const row = (impl: string, opsPerSec: number): ResultRow => ({
      case: 'add-one',
      impl,
      opsPerSec,
      p50Ms: 0,
      p99Ms: 0,
    });
    const rows = [
      row('stratus-redis', 30_000),
      row('bullmq', 10_000),
      row('stratus-postgres', 3000),
      row('pg-boss', 1000),
      row('plainjob', 1000),
    ];
    // plainjob has no stratus-sqlite row in this case: no ratio.
    assert.deepEqual(computeRatios(rows, stratusCounterpart), { 'add-one': { bullmq: 3, 'pg-boss': 3 } });
  });
});
