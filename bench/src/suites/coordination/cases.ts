/**
 * The cases of the coordination suite, with their counts for a full and a quick run and the targets:
 * three-step workflows end to end (concurrency 1 and 32), lock acquire + release (one caller, 8 callers on one key)
 * and leader failover after a SIGKILL. The same measurement code runs every implementation of a case.
 */
import type { CaseSummary } from '../../stats.js';
import type { MeasureContext, Scale } from '../messaging/cases.js';
import type { Measurement } from '../messaging/measure.js';
import type { RunnableCase } from '../messaging/runner.js';
import type { FailoverBackend } from './failover.js';
import type { LockImplementation } from './locks.js';
import type { WorkflowImplementation } from './workflows.js';

export interface CoordinationScale extends Scale {
  /** How long the kills of the failover case go on per backend (each kill waits out a lease). */
  readonly failoverMs: number;
}

export const fullScale: CoordinationScale = {
  jobs: 20_000,
  latencySamples: 0,
  lockMs: 0,
  rounds: 3,
  redeliveryRounds: 1,
  targetMs: 3000,
  capMs: 10_000,
  latencyCapMs: 0,
  warmupJobs: 2000,
  warmupCapMs: 2000,
  failoverMs: 30_000,
};

export const quickScale: CoordinationScale = {
  jobs: 1000,
  latencySamples: 0,
  lockMs: 0,
  rounds: 1,
  redeliveryRounds: 1,
  targetMs: 1000,
  capMs: 3000,
  latencyCapMs: 0,
  warmupJobs: 100,
  warmupCapMs: 1000,
  failoverMs: 8000,
};

/** Concurrent callers of the workflow throughput case. */
export const WORKFLOW_CALLERS = 32;
/** Callers contending for one lock key. */
export const LOCK_CALLERS = 8;

/** A figure the issue asks for, checked against a Stratus row. */
export interface Target {
  readonly text: string;
  /** `peer`: the summary of the row the target compares with, when it names one. */
  met(summary: CaseSummary, peer?: CaseSummary): boolean;
  /** The impl of the row a ratio target compares with. */
  readonly versus?: string;
}

type Family<D> = { readonly family: D };

/** A case of the suite: which implementations it runs (`family`) and how it measures them. */
export type CoordinationCase =
  | (RunnableCase<WorkflowImplementation, undefined> & CaseInfo & Family<'workflows'>)
  | (RunnableCase<LockImplementation, undefined> & CaseInfo & Family<'locks'>)
  | (RunnableCase<FailoverBackend, undefined> & CaseInfo & Family<'failover'>);

interface CaseInfo {
  readonly name: string;
  readonly description: string;
  /** Targets by impl (Stratus rows only). */
  readonly targets?: Readonly<Record<string, Target>>;
  /** Said under the table (published figures to set beside the rows). */
  readonly reference?: string;
}

/**
 * `callers` callers at once, each making its calls one after the other, `count` calls in all (or fewer when the
 * time cap ends it); every call is timed. `makeCall(caller)` builds a caller's call before the clock starts.
 */
export async function concurrentCalls(
  count: number,
  capMs: number,
  callers: number,
  makeCall: (caller: number) => () => Promise<void>,
): Promise<Measurement> {
  const calls = Array.from({ length: callers }, (_, caller) => makeCall(caller));
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + capMs;
  let next = 0;
  await Promise.all(
    calls.map(async (call) => {
      while (next < count && performance.now() < deadline) {
        next++;
        const before = performance.now();
        await call();
        latencies.push(performance.now() - before);
      }
    }),
  );
  return {
    jobs: latencies.length,
    ms: performance.now() - start,
    latencies,
    capped: latencies.length < count,
  };
}

/** Runs workflows from `callers` callers, each result checked (a workflow that returns nothing fails the row). */
function workflows(
  context: MeasureContext<WorkflowImplementation, undefined>,
  count: number,
  capMs: number,
  callers: number,
) {
  let input = 0;
  return concurrentCalls(count, capMs, callers, () => async () => {
    const given = ++input;
    const result = await context.driver.run(given);
    if (result !== given + 3) throw new Error(`workflow returned ${String(result)}, expected ${given + 3}`);
  });
}

/** Acquire + release of one lock key (fresh per measurement) from `callers` callers, each with its own lock. */
function locks(
  context: MeasureContext<LockImplementation, undefined>,
  count: number,
  capMs: number,
  callers: number,
) {
  return concurrentCalls(count, capMs, callers, (caller) => context.driver.caller(context.name, caller));
}

const POSTGRES_LATENCY: Target = {
  text: 'p50 ≤ 10 ms and p99 ≤ 40 ms for three steps on PostgreSQL',
  met: (s) => s.p50Ms <= 10 && s.p99Ms <= 40,
};

export function coordinationCases(scale: CoordinationScale): CoordinationCase[] {
  return [
    {
      family: 'workflows',
      name: 'workflow-c1',
      description:
        'three-step workflows (no-op steps returning a number) from start to result, one at a time: p50/p99 ' +
        'of each workflow',
      kind: 'throughput',
      step: 10,
      measure: (context, count, capMs) => workflows(context, count, capMs, 1),
      targets: { 'stratus-postgres': POSTGRES_LATENCY },
      reference: 'Restate publishes ~50 ms for a 3-step durable workflow',
    },
    {
      family: 'workflows',
      name: `workflow-c${WORKFLOW_CALLERS}`,
      description: `the same workflows from ${WORKFLOW_CALLERS} concurrent callers, each awaiting its own result`,
      kind: 'throughput',
      step: WORKFLOW_CALLERS,
      measure: (context, count, capMs) => workflows(context, count, capMs, WORKFLOW_CALLERS),
      targets: {
        'stratus-postgres': {
          text: 'workflows/s ≥ 2 × DBOS on the same PostgreSQL',
          versus: 'dbos',
          met: (s, peer) => peer !== undefined && s.opsPerSec >= 2 * peer.opsPerSec,
        },
      },
      reference: 'DBOS publishes 43 k workflows/s on a 96-vCPU database server',
    },
    {
      family: 'locks',
      name: 'lock-uncontended',
      description: 'acquire + release of one key by one caller, one after the other',
      kind: 'throughput',
      step: 10,
      measure: (context, count, capMs) => locks(context, count, capMs, 1),
    },
    {
      family: 'locks',
      name: `lock-contended-c${LOCK_CALLERS}`,
      description:
        `acquire + release of one key by ${LOCK_CALLERS} callers at once, each with its own lock object, ` +
        'each retrying every 10 ms while the key is held: p50/p99 of each acquire + release, waiting included',
      kind: 'throughput',
      step: LOCK_CALLERS,
      measure: (context, count, capMs) => locks(context, count, capMs, LOCK_CALLERS),
    },
    {
      family: 'failover',
      name: 'leader-failover',
      description:
        'five candidate processes; the leader is SIGKILLed (and replaced) again and again for a while: time from ' +
        "the kill to the successor's election (Stratus only: the peers have no leader election)",
      // One sample of a few kills, as messaging's redelivery: no warm-up, one round.
      kind: 'redelivery',
      step: 1,
      measure: (context) => context.driver.failovers(scale.failoverMs),
      targets: Object.fromEntries(
        ['stratus-sqlite', 'stratus-postgres', 'stratus-redis'].map((impl) => [
          impl,
          {
            text: 'p99 ≤ lease + 1 s',
            met: (s: CaseSummary) => s.p99Ms <= FAILOVER_LEASE_MS + 1000,
          },
        ]),
      ),
    },
  ];
}

/** The lease and renewal period of the failover candidates (the chaos fixture's). */
export const FAILOVER_LEASE_MS = 2000;
export const FAILOVER_RENEW_MS = 500;
