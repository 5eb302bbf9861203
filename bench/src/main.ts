/**
 * `npm run bench -- <suite> [--timing batch|per-call] [--only <case>,<case>] [--quick]`
 *
 * Runs a suite, prints the table and writes bench/results/<suite>.json (batch timing, the default) or
 * bench/results/<suite>.per-call.json (every call timed on its own, as tinybench does). `--only` runs some
 * cases and `--quick` a single short round (a smoke check); neither writes the results file, which always
 * holds a complete, full-length run. Self-timed suites (messaging: fixed job counts, latencies, crash recovery)
 * time their own cases; `--timing` does not apply to them.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  defaultSettings,
  findCollector,
  type HarnessSettings,
  runCases,
  type SelfTimedSuite,
  type Suite,
  type Timing,
  timings,
} from './harness.js';
import { buildResults, describeMachine, formatTable, type ResultsFile, writeResults } from './report.js';
import { cacheSuite } from './suites/cache.js';
import { conferenceSuite } from './suites/conference.js';
import { coordinationSuite } from './suites/coordination.js';
import { eventStoreSuite } from './suites/eventstore.js';
import { gatewaySuite } from './suites/gateway.js';
import { messagingSuite } from './suites/messaging.js';
import { resilienceSuite } from './suites/resilience.js';

const suites: Record<string, Suite | SelfTimedSuite> = {
  resilience: resilienceSuite,
  messaging: messagingSuite,
  eventstore: eventStoreSuite,
  cache: cacheSuite,
  coordination: coordinationSuite,
  conference: conferenceSuite,
  gateway: gatewaySuite,
};

const quickSettings: HarnessSettings = {
  ...defaultSettings,
  rounds: 1,
  warmupMs: 100,
  roundBudgetMs: 100,
  burstRoundBudgetMs: 200,
  minSamples: 10,
  minBurstSamples: 1,
};

function usage(problem?: string): never {
  if (problem !== undefined) console.error(problem);
  console.error(
    `usage: npm run bench -- <${Object.keys(suites).join('|')}> [--timing ${timings.join('|')}] ` +
      '[--only <case>,...] [--quick]',
  );
  process.exit(2);
}

let parsed: ReturnType<typeof parseOptions>;
try {
  parsed = parseOptions();
} catch (error) {
  usage((error as Error).message); // an unknown option or a missing value
}
const { values, positionals } = parsed;
const suite = suites[positionals[0] ?? ''];
const timing = timings.find((t) => t === values.timing);
if (suite === undefined || positionals.length !== 1 || timing === undefined) usage();

function parseOptions() {
  return parseArgs({
    allowPositionals: true,
    options: {
      only: { type: 'string' },
      quick: { type: 'boolean', default: false },
      timing: { type: 'string', default: 'batch' },
    },
  });
}

/** What the figures of each timing are, for the results file. */
const reported: Record<Timing, string> = {
  batch: 'ops/s = ops ÷ wall clock of the timed batches; p50/p99 are batch-averaged per-op latencies',
  'per-call':
    'every call timed on its own (performance.now() before and after it, as tinybench does); ' +
    'ops/s = calls ÷ sum of the per-call times (× callers for concurrent callers); p50/p99 are ' +
    'percentiles of the per-call times; bursts (bulkhead-throughput) are timed by the wall clock per burst',
};

const only = values.only?.split(',').map((s) => s.trim());
const started = performance.now();

/** Writes the results file of a complete run; a partial or quick one writes nothing. */
function finish(file: ResultsFile, name: string): void {
  if (only || values.quick) {
    console.log('\n(partial or quick run: results file not written)');
    return;
  }
  const path = join(import.meta.dirname, '..', 'results', `${name}.json`);
  writeResults(path, file);
  console.log(`\nwrote ${path}`);
}

if ('selfTimed' in suite) {
  if (timing !== 'batch') {
    console.error(`suite ${suite.name} times its own cases: --timing does not apply`);
    process.exit(2);
  }
  await runSelfTimed(suite);
} else await runHarnessSuite(suite, timing);
console.log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);

async function runSelfTimed(suite: SelfTimedSuite): Promise<void> {
  const prepared = await suite.prepare({
    quick: values.quick,
    only,
    log: (line) => console.log(`  ${line}`),
  });
  try {
    const run = await prepared.run();
    if (run.results.length === 0) throw new Error(`no case ran${only ? ` (--only ${values.only})` : ''}`);
    const file = buildResults(suite.name, describeMachine(run.settings), run.results, prepared.counterpart);
    console.log('');
    console.log(formatTable(run.results, file));
    for (const line of run.skipped) console.log(`SKIPPED: ${line}`);
    finish(file, suite.name);
  } finally {
    await prepared.close();
  }
}

async function runHarnessSuite(suite: Suite, timing: Timing): Promise<void> {
  const settings = values.quick ? quickSettings : defaultSettings;
  const collector = findCollector();
  const prepared = await suite.prepare();
  try {
    const cases = only ? prepared.cases.filter((c) => only.includes(c.case)) : prepared.cases;
    if (cases.length === 0) throw new Error(`no case matches --only ${values.only}`);
    console.log(
      `suite ${suite.name}: ${cases.length} cases, ${timing} timing, ${settings.rounds} round(s), ` +
        `GC: ${collector.how}`,
    );
    for (const line of prepared.skipped) console.log(`SKIPPED: ${line}`);
    const results = await runCases(cases, {
      settings,
      timing,
      collector,
      log: (line) => console.log(`  ${line}`),
    });
    const machine = describeMachine({
      timing,
      ...prepared.settings,
      harness: {
        ...settings,
        gc: collector.how,
        reported: `median of ${settings.rounds} rounds; ${reported[timing]}`,
      },
    });
    const file = buildResults(suite.name, machine, results);
    console.log('');
    console.log(formatTable(results, file));
    for (const line of prepared.skipped) console.log(`SKIPPED: ${line}`);
    finish(file, timing === 'batch' ? suite.name : `${suite.name}.${timing}`);
  } finally {
    await prepared.close();
  }
}
