/**
 * Suite "eventstore": the Stratus event store on PostgreSQL and SQLite side by side with Emmett 0.42 on the same
 * backends, on the same servers in one run: appends (one at a time to new streams and to one stream, from 8 and 32
 * concurrent writers, in batches of 100), short-stream reads, aggregate rebuilds with and without a snapshot,
 * catch-up subscription throughput and projection lag at 1,000 events/s. Each Emmett row is compared with Stratus
 * on its backend. The runner (rounds, warm-up sizing, rotation, medians) is the messaging suite's.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { CaseResult, PreparedSelfTimedSuite, SelfTimedOptions, SelfTimedSuite } from '../harness.js';
import {
  AFTER_SNAPSHOT,
  BATCH,
  CATCH_UP_FACTOR,
  type Contestant,
  type EventStoreCase,
  eventStoreCases,
  fullScale,
  LAG_IN_FLIGHT,
  LAG_RATE,
  LAG_SETTLE_MS,
  LONG_STREAM,
  quickScale,
  READ_STREAMS,
  SHORT_STREAM,
  WRITERS,
} from './eventstore/cases.js';
import { emmettImplementation } from './eventstore/emmett.js';
import { type Floors, measureFloors } from './eventstore/floors.js';
import { type EventStoreImplementation, PAYLOAD_BYTES, type StoreUnderTest } from './eventstore/store.js';
import { FOLLOW_BATCH, stratusImplementation } from './eventstore/stratus.js';
import type { Scale } from './messaging/cases.js';
import { type RowSettings, runCase } from './messaging/runner.js';
import { acquirePostgres, type PostgresTarget } from './messaging/servers.js';
import { describeError, sourceVersion } from './self-timed.js';

export const eventStoreImplementations: readonly EventStoreImplementation[] = [
  stratusImplementation('postgres'),
  emmettImplementation('postgres'),
  stratusImplementation('sqlite'),
  emmettImplementation('sqlite'),
];

/** The Stratus row each row is compared with (itself for Stratus rows). */
export function stratusCounterpart(impl: string): string | undefined {
  const implementation = eventStoreImplementations.find((i) => i.impl === impl);
  return implementation === undefined ? undefined : (implementation.versus ?? impl);
}

/** How long dropping a database waits for the connections other pools left to it to close. */
const IDLE_CONNECTIONS_WAIT_MS = 15_000;

/** Drops a database made for one measurement (its URL's path names it). */
async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  client.on('error', () => {});
  await client.connect();
  try {
    // A pool an implementation leaves open (Emmett's dumbo keeps its pools in a cache, without an error listener)
    // takes the termination of its idle connections as an unhandled error, which ends the run: wait for pg's idle
    // timeout (10 s) to close them first.
    const deadline = Date.now() + IDLE_CONNECTIONS_WAIT_MS;
    while (Date.now() < deadline) {
      const { rows } = await client.query<{ sessions: number }>(
        'SELECT count(*)::int AS sessions FROM pg_stat_activity WHERE datname = $1',
        [name],
      );
      if (rows[0]?.sessions === 0) break;
      await sleep(250);
    }
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

const removeSqlite = (path: string) => {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
};

/** An implementation with its data: a database (PostgreSQL) or file (SQLite) for the run, fresh ones on demand. */
class RunContestant implements Contestant {
  readonly impl: string;
  readonly implementation: EventStoreImplementation;
  readonly notes = new Map<string, string[]>();
  readonly #postgres: PostgresTarget | undefined;
  readonly #sqliteDir: string;
  #shared: Promise<{ store: StoreUnderTest; url?: string }> | undefined;

  constructor(
    implementation: EventStoreImplementation,
    postgres: PostgresTarget | undefined,
    sqliteDir: string,
  ) {
    this.impl = implementation.impl;
    this.implementation = implementation;
    this.#postgres = postgres;
    this.#sqliteDir = sqliteDir;
  }

  #database(name: string): Promise<string> {
    if (this.#postgres === undefined) throw new Error(`${this.impl}: no PostgreSQL server`);
    return this.#postgres.database(`${name}_${this.impl.replace(/-/g, '_')}`);
  }

  shared(): Promise<StoreUnderTest> {
    this.#shared ??= (async () => {
      if (this.implementation.backend === 'postgres') {
        const url = await this.#database('bench_es');
        return { store: await this.implementation.open({ postgresUrl: url }), url };
      }
      const path = join(this.#sqliteDir, `${this.impl}.db`);
      return { store: await this.implementation.open({ sqlitePath: path }) };
    })();
    return this.#shared.then(({ store }) => store);
  }

  async fresh(name: string) {
    if (this.implementation.backend === 'postgres') {
      const url = await this.#database(name);
      const store = await this.implementation.open({ postgresUrl: url });
      return {
        store,
        release: async () => {
          await store.close();
          await dropDatabase(url);
        },
      };
    }
    const path = join(this.#sqliteDir, `${name}-${this.impl}.db`);
    const store = await this.implementation.open({ sqlitePath: path });
    return {
      store,
      release: async () => {
        await store.close();
        removeSqlite(path);
      },
    };
  }

  note(caseName: string, text: string): void {
    this.notes.set(caseName, [...(this.notes.get(caseName) ?? []), text]);
  }

  /** Untimed, after each measurement: reclaims the shared PostgreSQL database's dead rows, as messaging does. */
  readonly afterEach = async (): Promise<void> => {
    const shared = await this.#shared;
    if (shared?.url !== undefined) await this.#postgres?.vacuum(shared.url);
  };

  async close(): Promise<void> {
    const shared = await this.#shared?.catch(() => undefined);
    await shared?.store.close();
  }
}

export interface EventStoreSuiteOverrides {
  /** Counts (the test's tiny ones); default the full or quick scale. */
  readonly scale?: Scale;
  /** Only these implementations. */
  readonly impls?: readonly string[];
  /** Where PostgreSQL comes from (DATABASE_URL or a throwaway durable server); default process.env. */
  readonly env?: Record<string, string | undefined>;
  /** Measure the box's floors (floors.ts) as the run starts and ends; default true. */
  readonly floors?: boolean;
}

/** The suite with its counts and implementations open to a test (`overrides`). */
export async function prepareEventStore(
  options: SelfTimedOptions,
  overrides: EventStoreSuiteOverrides = {},
): Promise<PreparedSelfTimedSuite> {
  const scale = overrides.scale ?? (options.quick ? quickScale : fullScale);
  const definitions = options.only
    ? eventStoreCases.filter((definition) => options.only?.includes(definition.name))
    : eventStoreCases;
  const chosen = eventStoreImplementations.filter((i) => overrides.impls?.includes(i.impl) ?? true);
  // Other work on a 2-core box moves every number: the load as the run starts, beside the one at its end.
  const loadAverageAtStart = loadavg().map((load) => Number(load.toFixed(2)));
  const source = sourceVersion();
  const skipped: string[] = [];
  let postgres: PostgresTarget | undefined;
  if (chosen.some((i) => i.backend === 'postgres')) {
    try {
      postgres = await acquirePostgres(true, overrides.env);
    } catch (error) {
      skipped.push(`PostgreSQL (durable): ${describeError(error)}`);
    }
  }
  const sqliteDir = mkdtempSync(join(tmpdir(), 'stratus-bench-eventstore-'));
  const contestants = chosen
    .filter((i) => i.backend === 'sqlite' || postgres !== undefined)
    .map((i) => new RunContestant(i, postgres, sqliteDir));
  let serial = 0;
  const nextName = () => `es_${process.pid}_${++serial}`;

  const floors = async (when: string): Promise<Floors | undefined> => {
    if (overrides.floors === false) return undefined;
    const url = postgres === undefined ? undefined : await postgres.database(`es_${process.pid}_floor`);
    try {
      const measured = await measureFloors(url, sqliteDir);
      options.log(`floors ${when}: ${JSON.stringify(measured)}`);
      return measured;
    } finally {
      if (url !== undefined) await dropDatabase(url);
    }
  };

  const run = async () => {
    const results: CaseResult[] = [];
    const rows: Record<string, Record<string, RowSettings>> = {};
    options.log(
      `suite eventstore: ${definitions.length} cases, ${scale.rounds} round(s), up to ${scale.jobs} operations ` +
        `per throughput measurement; load average ${loadAverageAtStart.join(' ')}`,
    );
    const floorsAtStart = await floors('as the run starts');
    for (const definition of definitions) {
      const entrants = contestants.filter(
        (c) =>
          (definition.backends?.includes(c.implementation.backend) ?? true) &&
          !(definition.stratusOnly && c.implementation.versus !== undefined),
      );
      if (entrants.length === 0) continue;
      const outcome = await runCase(
        definition,
        entrants.map((driver) => ({ driver, spec: undefined, afterEach: driver.afterEach })),
        { scale: definition.scale?.(scale) ?? scale, log: options.log, nextName },
      );
      skipped.push(...outcome.failed);
      rows[definition.name] = outcome.rows;
      for (const result of outcome.results) {
        const contestant = entrants.find((c) => c.impl === result.impl);
        results.push(withNotes(result, definition, contestant));
      }
    }
    const floorsAtEnd = await floors('as the run ends');
    const settings = settingsOf(scale, definitions, postgres, contestants, rows);
    return {
      results,
      skipped,
      settings: {
        source,
        loadAverageAtStart,
        floors: {
          what:
            'the same servers without an event store: PostgreSQL SELECT 1, one-row INSERT commits, 100-row ' +
            'INSERT commits (rows of the event size); SQLite one-row transactions (WAL, synchronous NORMAL)',
          atStart: floorsAtStart,
          atEnd: floorsAtEnd,
        },
        ...settings,
      },
    };
  };

  return {
    counterpart: stratusCounterpart,
    run,
    async close() {
      await Promise.all(contestants.map((c) => c.close()));
      await postgres?.close();
      rmSync(sqliteDir, { recursive: true, force: true });
    },
  };
}

/** Adds what the measurements observed and, on Stratus rows, whether the target is met. */
function withNotes(
  result: CaseResult,
  definition: EventStoreCase,
  contestant: RunContestant | undefined,
): CaseResult {
  const notes = result.note === undefined ? [] : [result.note];
  const observed = contestant?.notes.get(definition.name);
  if (observed !== undefined) notes.push(observed.join('; '));
  const implementation = contestant?.implementation;
  const target = implementation === undefined ? undefined : definition.targets?.[implementation.backend];
  if (target !== undefined && implementation?.versus === undefined) {
    notes.push(`target ${target.text}: ${target.met(result.summary) ? 'met' : 'MISSED'}`);
  }
  return { ...result, note: notes.length > 0 ? notes.join('; ') : undefined };
}

function settingsOf(
  scale: Scale,
  definitions: readonly EventStoreCase[],
  postgres: PostgresTarget | undefined,
  contestants: readonly RunContestant[],
  rows: Record<string, unknown>,
): Record<string, unknown> {
  return {
    payload: `one ItemAdded event, its data about ${PAYLOAD_BYTES} bytes of JSON ({ orderId, sku, quantity, priceCents, note })`,
    payloadBytes: PAYLOAD_BYTES,
    scale,
    counts: {
      batch: BATCH,
      writers: WRITERS,
      shortStream: SHORT_STREAM,
      readStreams: READ_STREAMS,
      longStream: LONG_STREAM,
      eventsAfterSnapshot: AFTER_SNAPSHOT,
      catchUpEvents: `${CATCH_UP_FACTOR} × scale.jobs`,
      subscriptionBatch: FOLLOW_BATCH,
      lag: { rate: LAG_RATE, inFlight: LAG_IN_FLIGHT, streams: 100, settleMs: LAG_SETTLE_MS },
    },
    servers: {
      postgres:
        postgres === undefined
          ? 'none (PostgreSQL rows skipped)'
          : { source: postgres.label, ...postgres.settings },
      postgresData:
        'a database per implementation for the run (vacuumed after each measurement); catch-up and lag: an ' +
        'empty database per measurement',
      sqlite: `files under ${tmpdir()}: one per implementation for the run; catch-up and lag: one per measurement`,
    },
    cases: Object.fromEntries(definitions.map((d) => [d.name, d.description])),
    targets: Object.fromEntries(
      definitions
        .filter((d) => d.targets !== undefined)
        .map((d) => [
          d.name,
          Object.fromEntries(Object.entries(d.targets ?? {}).map(([b, t]) => [b, t.text])),
        ]),
    ),
    implementations: Object.fromEntries(
      contestants.map((c) => [
        c.impl,
        {
          backend: c.implementation.backend,
          versus: c.implementation.versus,
          lag: c.implementation.live,
          ...c.implementation.description,
        },
      ]),
    ),
    observed: Object.fromEntries(contestants.map((c) => [c.impl, Object.fromEntries(c.notes)])),
    rows,
    reported:
      `median of ${scale.rounds} round(s), implementations interleaved in a rotated order, each after a warm-up ` +
      'run that sizes its count; throughput: ops/s = operations (events for batches and catch-up, reads, ' +
      'rebuilds) ÷ wall clock, p50/p99 of each call (catch-up: wall clock ÷ events); lag: ops/s = 1000 ÷ mean ' +
      "lag, p50/p99 of the events' lags; ratio = Stratus on the peer's backend ÷ peer",
  };
}

export const eventStoreSuite: SelfTimedSuite = {
  name: 'eventstore',
  selfTimed: true,
  prepare: (options) => prepareEventStore(options),
};
