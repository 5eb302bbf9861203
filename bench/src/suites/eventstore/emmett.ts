/**
 * Emmett 0.42 on PostgreSQL (`@event-driven-io/emmett-postgresql`) and SQLite (`@event-driven-io/emmett-sqlite`),
 * through their public APIs: `getPostgreSQLEventStore(url)` / `getSQLiteEventStore({ fileName })`,
 * `appendToStream` with `expectedStreamVersion`, `readStream`, `aggregateStream` (Emmett has no snapshots), and
 * a consumer with one processor (`reactor` on PostgreSQL, `processor` on SQLite) for subscriptions.
 */
import type { ReadEvent } from '@event-driven-io/emmett';
import { getPostgreSQLEventStore, type PostgresEventStore } from '@event-driven-io/emmett-postgresql';
import { getSQLiteEventStore, type SQLiteEventStore } from '@event-driven-io/emmett-sqlite';
import { openSqlite } from '@stratus/sql';
import {
  type BackendKind,
  type BenchEvent,
  type EventStoreImplementation,
  evolveOrder,
  type Following,
  initialOrder,
  type OrderState,
  type StoreLocation,
  type StoreUnderTest,
} from './store.js';
import { FOLLOW_BATCH } from './stratus.js';

/**
 * Consumer settings by mode. Catch-up: batches of 500 as Stratus reads, and no pause between full batches (the
 * default 50 ms pause caps a catch-up at 2,000 events/s). Live: Emmett's defaults (100 events, 50 ms), under which
 * a poll that finds fewer than a batch doubles its wait, up to 1 s.
 */
const PULLING = {
  'catch-up': { batchSize: FOLLOW_BATCH, pullingFrequencyInMs: 0 },
  live: undefined,
} as const;

type AnyEmmettStore = PostgresEventStore | SQLiteEventStore;

/** The events as Emmett takes them (its appendToStream wants a mutable array). */
const toEmmett = (events: readonly BenchEvent[]): BenchEvent[] => [...events];

class EmmettStore implements StoreUnderTest {
  readonly #store: AnyEmmettStore;
  readonly #backend: BackendKind;

  constructor(store: AnyEmmettStore, backend: BackendKind) {
    this.#store = store;
    this.#backend = backend;
  }

  async append(stream: string, events: readonly BenchEvent[], expected?: number): Promise<number> {
    const options = expected === undefined ? undefined : { expectedStreamVersion: BigInt(expected) };
    const result = await this.#store.appendToStream<BenchEvent>(stream, toEmmett(events), options);
    return Number(result.lastEventGlobalPosition);
  }

  async readStream(stream: string): Promise<number> {
    return (await this.#store.readStream<BenchEvent>(stream)).events.length;
  }

  async rebuild(stream: string): Promise<OrderState> {
    const { state } = await this.#store.aggregateStream<OrderState, BenchEvent>(stream, {
      initialState: initialOrder,
      evolve: evolveOrder,
    });
    return state;
  }

  async follow(mode: 'catch-up' | 'live', onEvent: (position: number) => void): Promise<Following> {
    const pulling = PULLING[mode];
    const eachMessage = (message: ReadEvent<BenchEvent>) => {
      onEvent(Number((message.metadata as { globalPosition: bigint }).globalPosition));
    };
    if (this.#backend === 'postgres') {
      const consumer = (this.#store as PostgresEventStore).consumer<BenchEvent>({ pulling });
      consumer.reactor<BenchEvent>({
        processorId: `bench-${mode}`,
        startFrom: 'BEGINNING',
        eachMessage: async (message) => eachMessage(message),
      });
      consumer.start().catch(() => {});
      return { stop: () => consumer.stop() };
    }
    const consumer = (this.#store as SQLiteEventStore).consumer<BenchEvent>({ pulling });
    consumer.processor<BenchEvent>({
      processorId: `bench-${mode}`,
      startFrom: 'BEGINNING',
      eachMessage: async (message) => eachMessage(message),
    });
    consumer.start().catch(() => {});
    return { stop: () => consumer.stop() };
  }

  async close(): Promise<void> {
    // The SQLite store opens and closes a connection per operation: nothing stays open.
    if (this.#backend === 'postgres') await (this.#store as PostgresEventStore).close();
  }
}

async function open(backend: BackendKind, location: StoreLocation): Promise<StoreUnderTest> {
  if (backend === 'postgres') {
    if (!('postgresUrl' in location)) throw new Error('emmett-postgres needs a PostgreSQL URL');
    const store = getPostgreSQLEventStore(location.postgresUrl);
    await store.schema.migrate();
    return new EmmettStore(store, backend);
  }
  if (!('sqlitePath' in location)) throw new Error('emmett-sqlite needs a file path');
  // WAL is a property of the file: set once here, Emmett's own `PRAGMA journal_mode = WAL` on each of its connections
  // changes nothing, and so cannot fail when it runs inside another of its operations' transactions (it did on Node 24).
  openSqlite(location.sqlitePath).close();
  const store = getSQLiteEventStore({ fileName: location.sqlitePath });
  await store.schema.migrate();
  return new EmmettStore(store, backend);
}

export function emmettImplementation(backend: BackendKind): EventStoreImplementation {
  const common = {
    api: 'appendToStream (expectedStreamVersion), readStream, aggregateStream, consumer with one processor',
    snapshots: 'none (Emmett has no snapshots): the snapshot case is Stratus only',
    consumer: {
      'catch-up': PULLING['catch-up'],
      live: 'defaults: batchSize 100, pullingFrequencyInMs 50; waits double up to 1 s while polls find < a batch',
      checkpoints: 'stored per event, in the transaction of its batch',
    },
  };
  return backend === 'postgres'
    ? {
        impl: 'emmett-postgres',
        backend,
        versus: 'stratus-postgres',
        description: {
          ...common,
          version: '@event-driven-io/emmett-postgresql 0.42.0',
          store: 'getPostgreSQLEventStore(url): its dumbo pool (pg.Pool defaults, 10 connections)',
        },
        live: 'consumer + reactor (polling, defaults)',
        open: (location) => open(backend, location),
      }
    : {
        impl: 'emmett-sqlite',
        backend,
        versus: 'stratus-sqlite',
        description: {
          ...common,
          version: '@event-driven-io/emmett-sqlite 0.42.4 (sqlite3 5.1.7)',
          store:
            'getSQLiteEventStore({ fileName }): a new connection per operation (its default for a file), WAL ' +
            "(set by Emmett), synchronous left at SQLite's default FULL: Emmett offers no setting, only a shared " +
            'singleton connection, which merges the transactions of concurrent appends',
        },
        live: 'consumer + processor (polling, defaults)',
        open: (location) => open(backend, location),
      };
}
