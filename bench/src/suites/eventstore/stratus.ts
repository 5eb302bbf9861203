/**
 * The Stratus event store on PostgreSQL or SQLite through its public API: the `EventStore` facade over
 * `PostgresEventStore` / `SqliteEventStore`, `aggregateStream`, an `AggregateRepository` with on-demand snapshots,
 * catch-up subscriptions, and for the lag case a `ProjectionRunner` into a `SqliteProjectionTarget` (SQLite) or a
 * catch-up subscription (PostgreSQL: no PostgreSQL projection target here).
 */
import {
  AggregateRepository,
  EventStore,
  PostgresEventStore,
  ProjectionRunner,
  SqliteEventStore,
  SqliteProjectionTarget,
} from '@stratus/eventsourcing';
import type { SqliteDatabase } from '@stratus/messaging';
import {
  type BackendKind,
  type EventStoreImplementation,
  evolveOrder,
  type Following,
  initialOrder,
  ORDER_CATEGORY,
  type OrderState,
  type StoreLocation,
  type StoreUnderTest,
} from './store.js';

/** Events per read of subscriptions and projections: Stratus's default, also given to Emmett's consumers. */
export const FOLLOW_BATCH = 500;

const ORDER_PREFIX = `${ORDER_CATEGORY}-`;

function orderId(stream: string): string {
  if (!stream.startsWith(ORDER_PREFIX)) throw new Error(`not an order stream: ${stream}`);
  return stream.slice(ORDER_PREFIX.length);
}

function catchUp(store: EventStore, name: string, onEvent: (position: number) => void): Promise<Following> {
  const subscription = store.subscribe({
    name,
    batchSize: FOLLOW_BATCH,
    handler: (event) => onEvent(event.globalPosition),
  });
  return subscription.caughtUp.then(() => subscription, fail(subscription));
}

/** A subscription or runner that failed to start rejects its wait; stop it before passing the error on. */
const fail =
  (running: Following) =>
  async (error: unknown): Promise<never> => {
    await running.stop();
    throw error;
  };

/** The lag case's projection on SQLite: one row per event in a view table, in the runner's transaction. */
async function sqliteProjection(
  store: EventStore,
  database: SqliteDatabase,
  onEvent: (position: number) => void,
): Promise<Following> {
  const applied: number[] = [];
  const runner = new ProjectionRunner(
    store,
    new SqliteProjectionTarget({ database }),
    {
      name: 'bench_lag',
      version: 1,
      setup: (db) => {
        db.exec('CREATE TABLE bench_lag_view (position INTEGER PRIMARY KEY, stream TEXT NOT NULL)');
      },
      apply: (db, event) => {
        db.prepare('INSERT INTO bench_lag_view (position, stream) VALUES (?, ?)').run(
          event.globalPosition,
          event.streamName,
        );
        applied.push(event.globalPosition);
      },
    },
    { batchSize: FOLLOW_BATCH },
  );
  // An event counts once its batch has committed, which the runner reports after the commit.
  runner.events.on((event) => {
    if (event.type !== 'batch-applied') return;
    for (const position of applied.splice(0)) onEvent(position);
  });
  const running = runner.start();
  running.catch(() => {});
  const following = { stop: () => runner.stop() };
  await Promise.race([runner.caughtUp, running]).catch(fail(following));
  return following;
}

class StratusStore implements StoreUnderTest {
  readonly #store: EventStore;
  readonly #database: SqliteDatabase | undefined;
  readonly snapshots: StoreUnderTest['snapshots'];

  constructor(store: EventStore, database: SqliteDatabase | undefined) {
    this.#store = store;
    this.#database = database;
    const decider = { initialState: initialOrder, evolve: evolveOrder };
    const withSnapshots = new AggregateRepository(store, {
      category: ORDER_CATEGORY,
      decider,
      snapshots: {},
    });
    this.snapshots = {
      take: async (stream) => {
        await withSnapshots.snapshot(orderId(stream));
      },
      rebuild: async (stream) => (await withSnapshots.load(orderId(stream))).state,
    };
  }

  async append(stream: string, events: readonly { type: string; data: unknown }[], expected?: number) {
    const result = await this.#store.appendToStream(stream, events, { expectedVersion: expected ?? 'any' });
    return result.lastPosition;
  }

  async readStream(stream: string): Promise<number> {
    return (await this.#store.readStream(stream)).length;
  }

  async rebuild(stream: string): Promise<OrderState> {
    const { state } = await this.#store.aggregateStream(stream, {
      initialState: initialOrder,
      evolve: evolveOrder,
    });
    return state;
  }

  follow(mode: 'catch-up' | 'live', onEvent: (position: number) => void): Promise<Following> {
    if (mode === 'live' && this.#database !== undefined) {
      return sqliteProjection(this.#store, this.#database, onEvent);
    }
    return catchUp(this.#store, `bench-${mode}`, onEvent);
  }

  close(): Promise<void> {
    return this.#store.close();
  }
}

async function open(backend: BackendKind, location: StoreLocation): Promise<StoreUnderTest> {
  if (backend === 'postgres') {
    if (!('postgresUrl' in location)) throw new Error('stratus-postgres needs a PostgreSQL URL');
    const postgres = new PostgresEventStore({ connectionString: location.postgresUrl });
    await postgres.migrate();
    return new StratusStore(new EventStore({ backend: postgres }), undefined);
  }
  if (!('sqlitePath' in location)) throw new Error('stratus-sqlite needs a file path');
  const sqlite = new SqliteEventStore({ path: location.sqlitePath, synchronous: 'NORMAL' });
  return new StratusStore(new EventStore({ backend: sqlite }), sqlite.database);
}

export function stratusImplementation(backend: BackendKind): EventStoreImplementation {
  const common = {
    api: 'EventStore facade: appendToStream (expectedVersion), readStream, aggregateStream, subscribe',
    snapshots: 'AggregateRepository with on-demand snapshots (repository.snapshot), load from the newest one',
    subscriptionBatch: FOLLOW_BATCH,
  };
  return backend === 'postgres'
    ? {
        impl: 'stratus-postgres',
        backend,
        description: {
          ...common,
          store:
            'PostgresEventStore({ connectionString }): its own pg pool of 10, group commit of concurrent appends',
        },
        live: 'catch-up subscription (store.subscribe, checkpointed per batch): no PostgresProjectionTarget here',
        open: (location) => open(backend, location),
      }
    : {
        impl: 'stratus-sqlite',
        backend,
        description: {
          ...common,
          store:
            'SqliteEventStore({ path, synchronous: NORMAL }): WAL, one connection, background WAL checkpoints',
        },
        live: 'ProjectionRunner into SqliteProjectionTarget (same file): one view row per event, batch of 500',
        open: (location) => open(backend, location),
      };
}
