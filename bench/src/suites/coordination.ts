/**
 * Suite "coordination": the Stratus coordination package beside its peers on the same servers in one run.
 * Workflows: three-step workflows end to end on the Stratus WorkflowEngine (PostgreSQL, SQLite) and DBOS Transact
 * (PostgreSQL). Locks: Stratus mutex() on Redis, PostgreSQL and SQLite leases beside redlock and redis-semaphore on
 * the same Redis. Leader failover after SIGKILL per lease backend (Stratus only). The runner (warm-up sizing,
 * rounds, rotation, medians) is the messaging suite's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CaseResult, PreparedSelfTimedSuite, SelfTimedOptions, SelfTimedSuite } from '../harness.js';
import { acquireRedis, type RedisTarget } from '../redis.js';
import { measureRedisFloors, REDIS_FLOORS, type RedisFloors } from '../redis-floors.js';
import {
  type CoordinationCase,
  type CoordinationScale,
  coordinationCases,
  FAILOVER_LEASE_MS,
  FAILOVER_RENEW_MS,
  fullScale,
  LOCK_CALLERS,
  quickScale,
  WORKFLOW_CALLERS,
} from './coordination/cases.js';
import { type FailoverBackend, failoverBackend } from './coordination/failover.js';
import {
  LOCK_TTL_MS,
  type LockImplementation,
  RETRY_MS,
  redisSemaphoreLock,
  redlockLock,
  stratusPostgresLock,
  stratusRedisLock,
  stratusSqliteLock,
  WAIT_MS,
} from './coordination/locks.js';
import {
  openDbosWorkflows,
  openStratusWorkflows,
  POOL_SIZE,
  type WorkflowImplementation,
} from './coordination/workflows.js';
import { type Floors, measureFloors } from './eventstore/floors.js';
import { type CaseOutcome, type Contender, type RowSettings, runCase } from './messaging/runner.js';
import { acquirePostgres, type PostgresTarget } from './messaging/servers.js';
import { describeError, sourceVersion } from './self-timed.js';

type Server = 'postgres' | 'redis' | 'sqlite';

/** An implementation of a family of cases, opened when its first case runs and closed after its last. */
interface Entry<D> {
  readonly impl: string;
  readonly server: Server;
  open(): Promise<D>;
}

/** What the servers of the run give the implementations. */
interface Servers {
  readonly postgres: PostgresTarget | undefined;
  readonly redis: RedisTarget;
  readonly sqliteDir: string;
}

/** The Stratus row each row is compared with (itself for Stratus rows). */
export function coordinationCounterpart(impl: string): string | undefined {
  if (impl === 'dbos') return 'stratus-postgres';
  if (impl === 'redlock' || impl === 'redis-semaphore') return 'stratus-redis';
  return impl.startsWith('stratus-') ? impl : undefined;
}

function workflowEntries(servers: Servers): Entry<WorkflowImplementation>[] {
  const postgresTarget = async (name: string) => {
    const postgres = servers.postgres as PostgresTarget;
    const url = await postgres.database(name);
    return { postgresUrl: url, vacuum: () => postgres.vacuum(url) };
  };
  return [
    {
      impl: 'stratus-postgres',
      server: 'postgres',
      open: async () => openStratusWorkflows(await postgresTarget(`bench_coord_wf_stratus_${process.pid}`)),
    },
    {
      impl: 'dbos',
      server: 'postgres',
      open: async () => {
        const { postgresUrl, vacuum } = await postgresTarget(`bench_coord_wf_dbos_${process.pid}`);
        return openDbosWorkflows(postgresUrl, vacuum);
      },
    },
    {
      impl: 'stratus-sqlite',
      server: 'sqlite',
      open: () => openStratusWorkflows({ sqlitePath: join(servers.sqliteDir, 'workflows.db') }),
    },
  ];
}

function lockEntries(servers: Servers): Entry<LockImplementation>[] {
  const redis = async () => {
    if (servers.redis.skip !== false) throw new Error(servers.redis.skip);
    return servers.redis.connect();
  };
  return [
    { impl: 'stratus-redis', server: 'redis', open: async () => stratusRedisLock(await redis()) },
    { impl: 'redlock', server: 'redis', open: async () => redlockLock(await redis()) },
    { impl: 'redis-semaphore', server: 'redis', open: async () => redisSemaphoreLock(await redis()) },
    {
      impl: 'stratus-postgres',
      server: 'postgres',
      open: async () => {
        const postgres = servers.postgres as PostgresTarget;
        const url = await postgres.database(`bench_coord_lock_${process.pid}`);
        return stratusPostgresLock(url, () => postgres.vacuum(url));
      },
    },
    {
      impl: 'stratus-sqlite',
      server: 'sqlite',
      open: async () => stratusSqliteLock(join(servers.sqliteDir, 'locks.db')),
    },
  ];
}

function failoverEntries(servers: Servers): Entry<FailoverBackend>[] {
  let serial = 0;
  return [
    {
      impl: 'stratus-sqlite',
      server: 'sqlite',
      open: async () =>
        failoverBackend('stratus-sqlite', 'sqlite', 'SqliteLeaseStore, a file per measurement', async () => ({
          BACKEND: 'sqlite',
          TARGET: join(servers.sqliteDir, `failover-${++serial}.db`),
        })),
    },
    {
      impl: 'stratus-postgres',
      server: 'postgres',
      open: async () =>
        failoverBackend(
          'stratus-postgres',
          'postgres',
          'PostgresLeaseStore (a pool of 2 per candidate), a database per measurement',
          async () => ({
            BACKEND: 'postgres',
            TARGET: await (servers.postgres as PostgresTarget).database(
              `bench_coord_failover_${process.pid}_${++serial}`,
            ),
            SCHEMA: 'stratus',
          }),
        ),
    },
    {
      impl: 'stratus-redis',
      server: 'redis',
      open: async () => {
        const redis = servers.redis;
        if (redis.skip !== false) throw new Error(redis.skip);
        return failoverBackend(
          'stratus-redis',
          'redis',
          'RedisLeaseStore, a key prefix per measurement',
          async () => ({ BACKEND: 'redis', TARGET: redis.url, PREFIX: `bench:failover:${++serial}:` }),
        );
      },
    },
  ];
}

export interface CoordinationSuiteOverrides {
  /** Counts (the test's tiny ones); default the full or quick scale. */
  readonly scale?: CoordinationScale;
  /** Only these implementations. */
  readonly impls?: readonly string[];
  /** Where the servers come from (DATABASE_URL, REDIS_URL, or throwaway ones); default process.env. */
  readonly env?: Record<string, string | undefined>;
  /** Measure the box's floors (eventstore/floors.ts) as the run starts and ends; default true. */
  readonly floors?: boolean;
}

/** The suite with its counts and implementations open to a test (`overrides`). */
export async function prepareCoordination(
  options: SelfTimedOptions,
  overrides: CoordinationSuiteOverrides = {},
): Promise<PreparedSelfTimedSuite> {
  const scale = overrides.scale ?? (options.quick ? quickScale : fullScale);
  const allCases = coordinationCases(scale);
  const definitions = options.only ? allCases.filter((c) => options.only?.includes(c.name)) : allCases;
  const chosen = (impl: string) => overrides.impls?.includes(impl) ?? true;
  // Other work on a 2-core box moves every number: the load as the run starts, beside the one at its end.
  const loadAverageAtStart = loadavg().map((load) => Number(load.toFixed(2)));
  const source = sourceVersion();
  const skipped: string[] = [];
  const sqliteDir = mkdtempSync(join(tmpdir(), 'stratus-bench-coordination-'));
  const noServers: Servers = { postgres: undefined, redis: { skip: 'not needed' }, sqliteDir };
  const needed = new Set<Server>(
    definitions.flatMap((definition) => entriesOf(definition, noServers).map((entry) => entry.server)),
  );
  let postgres: PostgresTarget | undefined;
  if (needed.has('postgres')) {
    try {
      postgres = await acquirePostgres(true, overrides.env);
    } catch (error) {
      skipped.push(`PostgreSQL (durable): ${describeError(error)}`);
    }
  }
  const redis: RedisTarget = needed.has('redis') ? await acquireRedis(overrides.env) : { skip: 'not needed' };
  if (needed.has('redis') && redis.skip !== false) skipped.push(`Redis: ${redis.skip}`);
  const servers: Servers = { postgres, redis, sqliteDir };
  const available = (server: Server) =>
    server === 'sqlite' || (server === 'postgres' ? postgres !== undefined : redis.skip === false);

  // A durable commit and a round trip on the same servers, to read the workflow and lock figures against.
  const floors = async (when: string): Promise<(Floors & { redis?: RedisFloors }) | undefined> => {
    if (overrides.floors === false) return undefined;
    const url =
      postgres === undefined ? undefined : await postgres.database(`bench_coord_floor_${process.pid}`);
    const measured = {
      ...(await measureFloors(url, sqliteDir)),
      ...(redis.skip === false ? { redis: await measureRedisFloors(redis.url, 'owner') } : {}),
    };
    options.log(`floors ${when}: ${JSON.stringify(measured)}`);
    return measured;
  };

  const run = async () => {
    const results: CaseResult[] = [];
    const rows: Record<string, Record<string, RowSettings>> = {};
    const descriptions: Record<string, Record<string, unknown>> = {};
    options.log(
      `suite coordination: ${definitions.length} cases, ${scale.rounds} round(s), up to ${scale.jobs} ` +
        `operations per throughput measurement, ${scale.failoverMs / 1000} s of kills per failover backend; ` +
        `load average ${loadAverageAtStart.join(' ')}`,
    );
    const floorsAtStart = await floors('as the run starts');
    // Families in the order of their first case; each family's implementations are open only while its cases run.
    const families = [...new Set(definitions.map((d) => d.family))];
    for (const family of families) {
      const cases = definitions.filter((d) => d.family === family);
      const entries = entriesOf(cases[0] as CoordinationCase, servers).filter((e) => chosen(e.impl));
      const opened: { impl: string; driver: Opened }[] = [];
      try {
        for (const entry of entries) {
          if (!available(entry.server)) continue;
          try {
            const driver = (await entry.open()) as Opened;
            opened.push({ impl: entry.impl, driver });
            descriptions[`${family}/${entry.impl}`] = driver.description;
          } catch (error) {
            skipped.push(`${family} / ${entry.impl}: ${describeError(error)}`);
            options.log(`${family} / ${entry.impl} could not start: ${describeError(error)}`);
          }
        }
        for (const definition of cases) {
          if (opened.length === 0) continue;
          const outcome = await runFamilyCase(definition, opened, scale, options.log);
          skipped.push(...outcome.failed);
          rows[definition.name] = outcome.rows;
          results.push(...withTargets(definition, outcome.results));
        }
      } finally {
        for (const { impl, driver } of opened) {
          await driver
            .close?.()
            .catch((error: unknown) => options.log(`closing ${impl}: ${describeError(error)}`));
        }
      }
    }
    const floorsAtEnd = await floors('as the run ends');
    const loadAverageAtEnd = loadavg().map((load) => Number(load.toFixed(2)));
    return {
      results,
      skipped,
      settings: {
        source,
        loadAverageAtStart,
        loadAverageAtEnd,
        floors: {
          what:
            "the eventstore suite's floors on the same servers, without Stratus: PostgreSQL SELECT 1, one-row " +
            'INSERT commits (durable), 100-row INSERT commits; SQLite one-row transactions (WAL, synchronous ' +
            `NORMAL); redis: ${REDIS_FLOORS}`,
          atStart: floorsAtStart,
          atEnd: floorsAtEnd,
        },
        ...settingsOf(scale, definitions, servers, descriptions, rows),
      },
    };
  };

  return {
    counterpart: coordinationCounterpart,
    run,
    async close() {
      await postgres?.close();
      if (redis.skip === false) await redis.close();
      rmSync(sqliteDir, { recursive: true, force: true });
    },
  };
}

type Opened = (WorkflowImplementation | LockImplementation | FailoverBackend) & {
  close?: () => Promise<void>;
};

function entriesOf(definition: CoordinationCase, servers: Servers): Entry<unknown>[] {
  if (definition.family === 'workflows') return workflowEntries(servers);
  if (definition.family === 'locks') return lockEntries(servers);
  return failoverEntries(servers);
}

let serial = 0;

/** Runs one case on the opened implementations of its family. */
function runFamilyCase(
  definition: CoordinationCase,
  opened: readonly { impl: string; driver: Opened }[],
  scale: CoordinationScale,
  log: (line: string) => void,
): Promise<CaseOutcome> {
  const options = { scale, log, nextName: () => `bench-${process.pid}-${++serial}` };
  const contenders = <D extends { impl: string; afterEach(): Promise<void> }>() =>
    opened.map(
      ({ driver }): Contender<D, undefined> => ({
        driver: driver as unknown as D,
        spec: undefined,
        afterEach: () => (driver as unknown as D).afterEach(),
      }),
    );
  if (definition.family === 'workflows')
    return runCase(definition, contenders<WorkflowImplementation>(), options);
  if (definition.family === 'locks') return runCase(definition, contenders<LockImplementation>(), options);
  return runCase(definition, contenders<FailoverBackend>(), options);
}

/** Adds, on Stratus rows with a target, whether it is met; and the published figures to read beside the rows. */
function withTargets(definition: CoordinationCase, results: readonly CaseResult[]): CaseResult[] {
  return results.map((result) => {
    const notes = result.note === undefined ? [] : [result.note];
    if (definition.family === 'failover') notes.push(`${result.samples} kills`);
    const target = definition.targets?.[result.impl];
    if (target !== undefined) {
      const peer = results.find((r) => r.impl === target.versus);
      if (target.versus !== undefined && peer === undefined)
        notes.push(`target ${target.text}: no ${target.versus} row`);
      else {
        const ratioText =
          peer === undefined ? '' : ` (${(result.summary.opsPerSec / peer.summary.opsPerSec).toFixed(2)}×)`;
        notes.push(
          `target ${target.text}: ${target.met(result.summary, peer?.summary) ? 'met' : 'MISSED'}${ratioText}`,
        );
      }
    }
    if (definition.reference !== undefined && result === results[0]) notes.push(definition.reference);
    return { ...result, note: notes.length > 0 ? notes.join('; ') : undefined };
  });
}

function settingsOf(
  scale: CoordinationScale,
  definitions: readonly CoordinationCase[],
  servers: Servers,
  implementations: Record<string, Record<string, unknown>>,
  rows: Record<string, unknown>,
): Record<string, unknown> {
  const { postgres, redis } = servers;
  return {
    scale,
    counts: {
      workflowCallers: WORKFLOW_CALLERS,
      lockCallers: LOCK_CALLERS,
      workflowPoolSize: POOL_SIZE,
      lock: { ttlMs: LOCK_TTL_MS, retryMs: RETRY_MS, waitMs: WAIT_MS },
      failover: { candidates: 5, leaseMs: FAILOVER_LEASE_MS, renewEveryMs: FAILOVER_RENEW_MS },
    },
    servers: {
      postgres:
        postgres === undefined
          ? 'none (PostgreSQL rows skipped)'
          : { source: postgres.label, ...postgres.settings },
      redis: redis.skip === false ? { source: redis.source, version: redis.version } : redis.skip,
      sqlite: `files under ${tmpdir()}, one per implementation (failover: one per measurement)`,
    },
    cases: Object.fromEntries(definitions.map((d) => [d.name, d.description])),
    targets: Object.fromEntries(
      definitions
        .filter((d) => d.targets !== undefined)
        .map((d) => [
          d.name,
          Object.fromEntries(Object.entries(d.targets ?? {}).map(([impl, t]) => [impl, t.text])),
        ]),
    ),
    references: Object.fromEntries(
      definitions.filter((d) => d.reference !== undefined).map((d) => [d.name, d.reference]),
    ),
    implementations,
    rows,
    reported:
      `median of ${scale.rounds} round(s), implementations interleaved in a rotated order, each after a warm-up ` +
      'run that sizes its count; workflows and locks: ops/s = calls ÷ wall clock, p50/p99 of each call (a ' +
      'workflow from start to result, an acquire + release); failover: one measurement of several kills, ' +
      "p50/p99 of the kill-to-election times, ops/s = 1000 ÷ their mean; ratio = Stratus on the peer's backend ÷ peer",
  };
}

export const coordinationSuite: SelfTimedSuite = {
  name: 'coordination',
  selfTimed: true,
  prepare: (options) => prepareCoordination(options),
};
