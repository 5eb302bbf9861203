/**
 * The attack suite's fuzzer: every operation of the app's own /api/openapi.json and every route of the sites (read
 * from Fastify's route table: the pages and their forms) gets valid, boundary and malformed requests (./fuzz), on
 * the embedded default and on PostgreSQL. No answer may be a 5xx, nothing may reject unhandled or throw uncaught,
 * and the heap must stay bounded. A fixed budget (seed and runs per route) keeps it to seconds in CI; FUZZ_RUNS and
 * FUZZ_SEED run it longer or elsewhere (README: Tests).
 *
 * The system runs on a clock 20 times faster than real time, so that the requests that wait (a long poll of up to
 * 30 s, a page waiting 5 s for the views) answer within the budget.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { InjectOptions } from 'fastify';
import { fuzzFixture } from './fixtures/fuzz-fixture.js';
import { fuzzTargets } from './fixtures/fuzz-targets.js';
import { testBackends } from './fixtures/test-backends.js';
import { startTestServer, type TestServer } from './fixtures/test-server.js';
import { runFuzz, type Send } from './fuzz/fuzz-run.js';
import { TimeLapseClock } from './fuzz/time-lapse-clock.js';

/** A whole number of at least `min` from the environment, else `fallback`. */
function setting(name: string, fallback: number, min: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  if (!/^\d{1,9}$/.test(value) || Number(value) < min)
    throw new Error(`${name} must be a whole number of at least ${min}, got ${value}`);
  return Number(value);
}

const RUNS = setting('FUZZ_RUNS', 30, 1);
const SEED = setting('FUZZ_SEED', 2021, 0);
const TIME_LAPSE = 20;
/** How much the heap may grow over a run (after a full collection before and after). */
const HEAP_GROWTH_MB = 64;

const backends = await testBackends('conference-fuzz');

/** A full garbage collection (`--expose-gc` set at run time: a new context then has `gc`). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

const heapMb = () => process.memoryUsage().heapUsed / 2 ** 20;

for (const backend of backends) {
  describe(`the fuzzer on ${backend.name}`, { skip: backend.skip }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend.env(), { clock: new TimeLapseClock(TIME_LAPSE) });
    });
    after(() => server?.stop());

    // A longer run (FUZZ_RUNS) gets the time it needs past the runner's default of a minute.
    const timeout = 60_000 + RUNS * 1_000;
    test('valid, boundary and malformed requests to every route: no 5xx, no crash, a bounded heap', {
      timeout,
    }, async (t) => {
      const { app, system } = server;
      const { targets, undocumented, formFields } = await fuzzTargets(app, await fuzzFixture(app, system));
      assert.ok(undocumented >= 30, `the sites' pages and forms are fuzzed too (${undocumented} routes)`);
      const send: Send = async (request) => {
        const response = await app.inject({
          method: request.method as InjectOptions['method'],
          url: request.url,
          headers: request.headers,
          ...(request.payload === undefined ? {} : { payload: request.payload }),
        });
        return { statusCode: response.statusCode, body: response.body };
      };
      collectGarbage();
      const heapBefore = heapMb();
      const report = await runFuzz(send, targets, { seed: SEED, runs: RUNS });
      collectGarbage();
      const heapGrowth = heapMb() - heapBefore;
      t.diagnostic(
        `${report.requests} requests to ${targets.length} routes in ${(report.durationMs / 1000).toFixed(1)} s ` +
          `(seed ${SEED}, ${RUNS} runs a route); statuses ${JSON.stringify(report.statuses)}; ` +
          `heap ${heapGrowth >= 0 ? '+' : ''}${heapGrowth.toFixed(1)} MB; ${formFields} form fields`,
      );

      // Routes whose every answer refused the request: the fixture's values do not take the fuzzer past them.
      const refusing = Object.entries(report.statusesByTarget)
        .filter(([, counts]) => Object.keys(counts).every((status) => Number(status) >= 400))
        .map(([name, counts]) => `${name} ${JSON.stringify(counts)}`);
      t.diagnostic(`routes that refused every request: ${refusing.join('; ') || 'none'}`);
      assert.deepEqual(report.failures, [], 'requests answered with a 5xx (shrunk)');
      assert.deepEqual(report.crashes, [], 'unhandled rejections or uncaught exceptions');
      assert.ok(report.requests >= targets.length * RUNS);
      assert.ok(
        refusing.length < targets.length / 4,
        'most routes got past their checks as well as into them',
      );
      assert.ok(heapGrowth < HEAP_GROWTH_MB, `the heap grew by ${heapGrowth.toFixed(1)} MB`);
    });
  });
}
