/**
 * Suite "messaging" (anchors §13 Q1–Q5): Stratus messaging on SQLite, PostgreSQL and Redis side by side with
 * plainjob (SQLite), pg-boss and Graphile Worker (PostgreSQL), BullMQ and bee-queue (Redis), on the same local
 * servers in one run: adds one at a time, from concurrent producers and in bulk; processing at concurrency 1, 50
 * and batched; idle enqueue-to-start latency; time to redelivery after a SIGKILL. Each peer is compared with
 * Stratus on its own backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CaseResult, PreparedSelfTimedSuite, SelfTimedOptions, SelfTimedSuite } from '../harness.js';
import { acquireRedis, type RedisTarget } from '../redis.js';
import { measureRedisFloors, REDIS_FLOORS, type RedisFloors } from '../redis-floors.js';
import {
  BULK_BATCH,
  type CaseDefinition,
  fullScale,
  HIGH_CONCURRENCY,
  LATENCY_GAP_MS,
  messagingCases,
  PRODUCERS,
  quickScale,
  type Scale,
} from './messaging/cases.js';
import { type Connection, type Driver, jobData, PAYLOAD_BYTES } from './messaging/driver.js';
import { createDriver, implementations, stratusCounterpart } from './messaging/implementations.js';
import { type Contender, type RowSettings, runCase } from './messaging/runner.js';
import { acquirePostgres, type PostgresTarget } from './messaging/servers.js';
import { STRATUS_BATCH } from './messaging/stratus.js';
import { describeError, sourceVersion } from './self-timed.js';

type PostgresRole = CaseDefinition['postgres'];

/** The servers of a run; a missing one skips its implementations, saying why. */
interface Servers {
  readonly postgres: Partial<Record<PostgresRole, PostgresTarget>>;
  readonly redis: RedisTarget;
  readonly sqliteDir: string;
  readonly skipped: string[];
  close(): Promise<void>;
}

async function startServers(): Promise<Servers> {
  const skipped: string[] = [];
  const postgres: Partial<Record<PostgresRole, PostgresTarget>> = {};
  // With DATABASE_URL there is one server: its own settings apply, and the -nosync cases are not run.
  const roles: PostgresRole[] = process.env.DATABASE_URL ? ['durable'] : ['durable', 'nosync'];
  for (const role of roles) {
    try {
      postgres[role] = await acquirePostgres(role === 'durable');
    } catch (error) {
      skipped.push(`PostgreSQL (${role}): ${describeError(error)}`);
    }
  }
  const redis = await acquireRedis();
  if (redis.skip !== false) skipped.push(`Redis: ${redis.skip}`);
  const sqliteDir = mkdtempSync(join(tmpdir(), 'stratus-bench-messaging-'));
  return {
    postgres,
    redis,
    sqliteDir,
    skipped,
    async close() {
      await Promise.all(Object.values(postgres).map((target) => target.close()));
      if (redis.skip === false) await redis.close();
      rmSync(sqliteDir, { recursive: true, force: true });
    },
  };
}

/** Drivers by implementation and PostgreSQL role, made on first use (each PostgreSQL one in its own database). */
class Contenders {
  readonly #servers: Servers;
  readonly #made = new Map<string, Contender>();
  readonly #unavailable = new Map<string, string>();

  constructor(servers: Servers) {
    this.#servers = servers;
  }

  /** The contender of `impl` for a case whose PostgreSQL rows use `role`, or the reason there is none. */
  async get(impl: string, role: PostgresRole): Promise<Contender | string> {
    const { backend } = implementations[impl] ?? {};
    const key = backend === 'postgres' ? `${impl}@${role}` : impl;
    const made = this.#made.get(key);
    if (made) return made;
    const known = this.#unavailable.get(key);
    if (known !== undefined) return known;
    try {
      const contender = await this.#make(impl, role);
      if (typeof contender === 'string') this.#unavailable.set(key, contender);
      else this.#made.set(key, contender);
      return contender;
    } catch (error) {
      const reason = `${impl}: ${describeError(error)}`;
      this.#unavailable.set(key, reason);
      return reason;
    }
  }

  async #make(impl: string, role: PostgresRole): Promise<Contender | string> {
    const { backend } = implementations[impl] ?? {};
    const servers = this.#servers;
    const connection: Connection = {};
    let afterEach = async () => {};
    if (backend === 'postgres') {
      const target = servers.postgres[role];
      if (target === undefined) return `${impl}: no PostgreSQL (${role}) server`;
      const url = await target.database(`bench_${impl.replace(/-/g, '_')}_${role}`);
      Object.assign(connection, { postgresUrl: url });
      afterEach = () => target.vacuum(url);
    } else if (backend === 'redis') {
      const { redis } = servers;
      if (redis.skip !== false) return `${impl}: ${redis.skip}`;
      Object.assign(connection, { redisUrl: redis.url, redisPrefix: `bench:${impl}` });
    } else {
      Object.assign(connection, { sqliteDir: servers.sqliteDir });
    }
    const spec = { impl, connection };
    const driver: Driver = createDriver(spec);
    return { driver, spec, afterEach };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#made.values()].map((contender) => contender.driver.close()));
  }

  get drivers(): Driver[] {
    return [...this.#made.values()].map((contender) => contender.driver);
  }
}

async function prepare(options: SelfTimedOptions): Promise<PreparedSelfTimedSuite> {
  const scale: Scale = options.quick ? quickScale : fullScale;
  const definitions = options.only
    ? messagingCases.filter((definition) => options.only?.includes(definition.name))
    : messagingCases;
  // Other work on a 2-core box moves every number: the load as the run starts, beside the one at its end.
  const loadAverageAtStart = loadavg().map((load) => Number(load.toFixed(2)));
  const source = sourceVersion();
  const servers = await startServers();
  const contenders = new Contenders(servers);
  let serial = 0;
  const nextName = () => `bench_${process.pid}_${++serial}`;

  // One round trip through each Redis client, to read the Redis rows against.
  const floors = async (when: string): Promise<RedisFloors | undefined> => {
    const { redis } = servers;
    if (redis.skip !== false) return undefined;
    const measured = await measureRedisFloors(redis.url, JSON.stringify(jobData()));
    options.log(`Redis floors ${when}: ${JSON.stringify(measured)}`);
    return measured;
  };

  const run = async () => {
    const results: CaseResult[] = [];
    const rows: Record<string, Record<string, RowSettings & { postgres?: string }>> = {};
    const skipped = [...servers.skipped];
    options.log(
      `suite messaging: ${definitions.length} cases, ${scale.rounds} round(s), up to ${scale.jobs} jobs per ` +
        `throughput measurement`,
    );
    const floorsAtStart = await floors('as the run starts');
    for (const definition of definitions) {
      const chosen: Contender[] = [];
      for (const [impl, implementation] of Object.entries(implementations)) {
        if (definition.backends && !definition.backends.includes(implementation.backend)) continue;
        if (definition.stratusOnly && implementation.versus !== undefined) continue;
        const contender = await contenders.get(impl, definition.postgres);
        if (typeof contender === 'string') {
          if (!skipped.includes(contender)) skipped.push(contender);
          continue;
        }
        if (definition.batched && contender.driver.batching === undefined) continue;
        if (definition.kind === 'redelivery' && 'skip' in contender.driver.redelivery) {
          skipped.push(`${definition.name} / ${impl}: ${contender.driver.redelivery.skip}`);
          continue;
        }
        chosen.push(contender);
      }
      if (chosen.length === 0) continue;
      const outcome = await runCase(definition, chosen, { scale, log: options.log, nextName });
      results.push(...outcome.results);
      skipped.push(...outcome.failed);
      for (const [impl, row] of Object.entries(outcome.rows)) {
        const onPostgres = implementations[impl]?.backend === 'postgres';
        const postgres = onPostgres ? servers.postgres[definition.postgres]?.label : undefined;
        rows[definition.name] ??= {};
        (rows[definition.name] as Record<string, RowSettings & { postgres?: string }>)[impl] = {
          ...row,
          ...(postgres === undefined ? {} : { postgres }),
        };
      }
    }
    const floorsAtEnd = await floors('as the run ends');
    const settings = settingsOf(scale, definitions, servers, contenders.drivers, rows);
    return {
      results,
      skipped,
      settings: {
        source,
        loadAverageAtStart,
        floors: { what: REDIS_FLOORS, atStart: floorsAtStart, atEnd: floorsAtEnd },
        ...settings,
      },
    };
  };

  return {
    counterpart: stratusCounterpart,
    run,
    async close() {
      await contenders.close();
      await servers.close();
    },
  };
}

function settingsOf(
  scale: Scale,
  definitions: readonly CaseDefinition[],
  servers: Servers,
  drivers: readonly Driver[],
  rows: Record<string, unknown>,
): Record<string, unknown> {
  const postgres = Object.fromEntries(
    Object.entries(servers.postgres).map(([role, target]) => [
      role,
      { source: target.label, ...target.settings },
    ]),
  );
  return {
    payload: `about ${PAYLOAD_BYTES} bytes of JSON: { t: performance.now() at send, pad }`,
    payloadBytes: PAYLOAD_BYTES,
    handlers: 'no-op (the latency worker reads t)',
    duplicateDetection: 'Stratus: on (queue default, 10 min window); peers: their defaults (none by id)',
    jobsPerThroughputMeasurement: scale.jobs,
    bulkBatch: BULK_BATCH,
    concurrency: [1, HIGH_CONCURRENCY],
    addConcurrentProducers: PRODUCERS,
    batchedFetch: `Stratus prefetch ${STRATUS_BATCH} - concurrency; peers: see implementations`,
    latency: { samplesPerRound: scale.latencySamples, gapMs: LATENCY_GAP_MS },
    redelivery: {
      lockMs: scale.lockMs,
      rule: 'the lock (visibility timeout) and, where a periodic check finds stalled jobs, its interval, set to lockMs',
    },
    scale,
    servers: {
      postgres,
      postgresRows: 'every case on the durable server, except the *-nosync cases (PostgreSQL rows only)',
      redis:
        servers.redis.skip === false
          ? { source: servers.redis.source, version: servers.redis.version }
          : { skipped: servers.redis.skip },
      sqlite: `files under ${tmpdir()} (one per queue)`,
    },
    cases: Object.fromEntries(
      definitions.map((definition) => [
        definition.name,
        `${definition.description}; PostgreSQL: ${definition.postgres}`,
      ]),
    ),
    implementations: Object.fromEntries(
      uniqueByImpl(drivers).map((driver) => [
        driver.impl,
        {
          backend: driver.backend,
          versus: implementations[driver.impl]?.versus,
          ...driver.description,
          ...(driver.batching ? { batching: driver.batching } : {}),
          redelivery: 'how' in driver.redelivery ? driver.redelivery.how : driver.redelivery.skip,
        },
      ]),
    ),
    rows,
    reported:
      `median of ${scale.rounds} round(s), implementations interleaved in a rotated order, each after a warm-up ` +
      'run; throughput: ops/s = jobs ÷ wall clock, p50/p99 of each add call (process cases: wall clock ÷ jobs); ' +
      'latency and redelivery: ops/s = 1000 ÷ mean time, p50/p99 of the times; ratio = Stratus on the ' +
      "peer's backend ÷ peer",
  };
}

const uniqueByImpl = (drivers: readonly Driver[]) => [
  ...new Map(drivers.map((driver) => [driver.impl, driver])).values(),
];

export const messagingSuite: SelfTimedSuite = { name: 'messaging', selfTimed: true, prepare };
