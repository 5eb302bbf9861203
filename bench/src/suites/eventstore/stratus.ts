/**
 * The Stratus event store on PostgreSQL or SQLite through its public API: the `EventStore` facade over
 * `PostgresEventStoreBackend` / `SqliteEventStoreBackend`, `aggregateStream`, an `AggregateRepository` with on-demand snapshots,
 * catch-up subscriptions, and for the lag case a `ProjectionRunner` into a `PostgresProjectionTarget` or
 * `SqliteProjectionTarget` sharing the store's pool or file.
 */
import {
  AggregateRepository,
  EventStore,
  PostgresEventStoreBackend,
  PostgresProjectionTarget,
  ProjectionRunner,
  type ProjectionTarget,
  type RecordedEvent,
  SqliteEventStoreBackend,
  SqliteProjectionTarget,
} from '@stratus/eventsourcing';
import type { SqliteDatabase } from '@stratus/sql';
import pg, { type PoolClient } from 'pg';
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

/** Connections of the Stratus pool: PostgresEventStoreBackend's default, and pg's (which Emmett's pool keeps). */
const POOL_SIZE = 10;

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

/** The lag case's view: one row per event, each batch written in one statement of the runner's transaction. */
interface LagView<Tx> {
  setup(tx: Tx): void | Promise<void>;
  insert(tx: Tx, events: readonly RecordedEvent[]): void | Promise<void>;
}

const sqliteView: LagView<SqliteDatabase> = {
  setup: (db) => db.exec('CREATE TABLE bench_lag_view (position INTEGER PRIMARY KEY, stream TEXT NOT NULL)'),
  insert: (db, events) => {
    const insert = db.prepare('INSERT INTO bench_lag_view (position, stream) VALUES (?, ?)');
    for (const event of events) insert.run(event.globalPosition, event.streamName);
  },
};

const postgresView: LagView<PoolClient> = {
  setup: async (client) => {
    await client.query('CREATE TABLE bench_lag_view (position bigint PRIMARY KEY, stream text NOT NULL)');
  },
  insert: async (client, events) => {
    await client.query({
      name: 'bench_lag_insert',
      text: 'INSERT INTO bench_lag_view (position, stream) SELECT * FROM unnest($1::bigint[], $2::text[])',
      values: [events.map((event) => event.globalPosition), events.map((event) => event.streamName)],
    });
  },
};

/** A ProjectionRunner keeping `view` up to date; `onEvent` hears of each event once its batch has committed. */
async function project<Tx>(
  store: EventStore,
  target: ProjectionTarget<Tx>,
  view: LagView<Tx>,
  onEvent: (position: number) => void,
): Promise<Following> {
  const applied: number[] = [];
  const runner = new ProjectionRunner(
    store,
    target,
    {
      name: 'bench_lag',
      version: 1,
      setup: (tx) => view.setup(tx),
      applyBatch: (tx, events) => {
        for (const event of events) applied.push(event.globalPosition);
        return view.insert(tx, events);
      },
    },
    { batchSize: FOLLOW_BATCH },
  );
  runner.events.on((event) => {
    // A batch that rolled back is applied again: only a committed batch counts.
    if (event.type === 'batch-applied') for (const position of applied.splice(0)) onEvent(position);
    else if (event.type === 'lease-lost' || event.type === 'failed') applied.length = 0;
  });
  const running = runner.start();
  running.catch(() => {});
  const following = { stop: () => runner.stop() };
  await Promise.race([runner.caughtUp, running]).catch(fail(following));
  return following;
}

class StratusStore implements StoreUnderTest {
  readonly #store: EventStore;
  readonly #project: (onEvent: (position: number) => void) => Promise<Following>;
  readonly #close: () => Promise<void>;
  readonly snapshots: StoreUnderTest['snapshots'];

  constructor(
    store: EventStore,
    project: (onEvent: (position: number) => void) => Promise<Following>,
    close: () => Promise<void>,
  ) {
    this.#store = store;
    this.#project = project;
    this.#close = close;
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
    if (mode === 'live') return this.#project(onEvent);
    return catchUp(this.#store, 'bench-catch-up', onEvent);
  }

  close(): Promise<void> {
    return this.#close();
  }
}

async function open(backend: BackendKind, location: StoreLocation): Promise<StoreUnderTest> {
  if (backend === 'postgres') {
    if (!('postgresUrl' in location)) throw new Error('stratus-postgres needs a PostgreSQL URL');
    // One pool for the store and the projection target, as an application would share it.
    const pool = new pg.Pool({ connectionString: location.postgresUrl, max: POOL_SIZE });
    pool.on('error', () => {});
    const postgres = new PostgresEventStoreBackend({ pool });
    await postgres.migrate();
    const store = new EventStore({ backend: postgres });
    const target = new PostgresProjectionTarget({ pool });
    return new StratusStore(
      store,
      (onEvent) => project(store, target, postgresView, onEvent),
      async () => {
        await store.close();
        await pool.end();
      },
    );
  }
  if (!('sqlitePath' in location)) throw new Error('stratus-sqlite needs a file path');
  const sqlite = new SqliteEventStoreBackend({ path: location.sqlitePath, synchronous: 'NORMAL' });
  const store = new EventStore({ backend: sqlite });
  const target = new SqliteProjectionTarget({ database: sqlite.database });
  return new StratusStore(
    store,
    (onEvent) => project(store, target, sqliteView, onEvent),
    () => store.close(),
  );
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
            'PostgresEventStoreBackend({ connectionString }): its own pg pool of 10, group commit of concurrent appends',
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
            'SqliteEventStoreBackend({ path, synchronous: NORMAL }): WAL, one connection, background WAL checkpoints',
        },
        live: 'ProjectionRunner into SqliteProjectionTarget (same file): one view row per event, batch of 500',
        open: (location) => open(backend, location),
      };
}
