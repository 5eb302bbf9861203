import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite, type SqliteDatabase } from '@stratus/sql';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import type { RecordedEvent } from '../backend.js';
import { EventStore } from '../event-store.js';
import { withOutage } from '../fixtures/outage.js';
import { SqliteEventStoreBackend } from '../sqlite/sqlite-event-store.js';
import type { Projection, ProjectionRunnerEvent } from './projection.js';
import { ProjectionRunner, removeViewVersion } from './projection-runner.js';
import { projectionTargetContract } from './projection-target.contract.js';
import { SqliteProjectionTarget } from './sqlite-projection-target.js';
import { activeVersion } from './target.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-projections-'));
/** Every database the tests open: closed before the directory goes (their background checkpointers write into it). */
const opened: SqliteDatabase[] = [];
const openDatabase = (name: string) => {
  const database = openSqlite(join(directory, name));
  opened.push(database);
  return database;
};
after(() => {
  for (const database of opened) database.close();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});
let files = 0;

/** Orders per status; version 2 also sums the seats. */
export const ordersView: Projection<SqliteDatabase> = {
  name: 'orders',
  version: 1,
  eventTypes: ['OrderPlaced', 'OrderConfirmed'],
  setup(db, version) {
    db.exec(
      `CREATE TABLE orders_v${version} (id TEXT PRIMARY KEY, status TEXT NOT NULL, seats INTEGER NOT NULL)`,
    );
  },
  apply(db, event: RecordedEvent, version) {
    const id = event.streamName.slice('order-'.length);
    if (event.type === 'OrderPlaced') {
      const seats = version >= 2 ? (event.data as { seats: number }).seats : 0;
      db.prepare(`INSERT INTO orders_v${version} (id, status, seats) VALUES (?, 'placed', ?)`).run(id, seats);
    } else {
      db.prepare(`UPDATE orders_v${version} SET status = 'confirmed' WHERE id = ?`).run(id);
    }
  },
  teardown(db, version) {
    db.exec(`DROP TABLE orders_v${version}`);
  },
};

function open(clock?: VirtualClock) {
  const database = openDatabase(`p-${++files}.db`);
  const store = new EventStore({
    backend: new SqliteEventStoreBackend({ database, watchIntervalMs: 5 }),
    ...(clock ? { clock } : {}),
  });
  const target = new SqliteProjectionTarget({ database });
  return { database, store, target };
}

/** Plain objects: node:sqlite returns rows without a prototype. */
const rows = (db: SqliteDatabase, version: number) =>
  db
    .prepare(`SELECT id, status, seats FROM orders_v${version} ORDER BY id`)
    .all()
    .map((row) => ({ ...row }));

async function placeOrders(store: EventStore, from: number, to: number) {
  for (let i = from; i <= to; i++) {
    await store.appendToStream(`order-${i}`, [{ type: 'OrderPlaced', data: { seats: i } }]);
    if (i % 2 === 0) await store.appendToStream(`order-${i}`, [{ type: 'OrderConfirmed', data: {} }]);
    await store.appendToStream(`audit-${i}`, [{ type: 'Noted', data: {} }]);
  }
}

projectionTargetContract('sqlite', async () => {
  const database = openDatabase(`contract-${++files}.db`);
  return {
    target: new SqliteProjectionTarget({ database }),
    createTable: (db, table) => db.exec(`CREATE TABLE ${table} (id TEXT PRIMARY KEY)`),
    dropTable: (db, table) => db.exec(`DROP TABLE ${table}`),
    insert: (db, table, id) => {
      db.prepare(`INSERT INTO ${table} (id) VALUES (?)`).run(id);
    },
    ids: async (table) =>
      database
        .prepare(`SELECT id FROM ${table} ORDER BY id`)
        .all<{ id: string }>()
        .map((row) => row.id),
  };
});

/** `target`, counting the commits made through it. */
function countingCommits(target: SqliteProjectionTarget): SqliteProjectionTarget & { commits: number } {
  const counting = Object.create(target, {
    commit: {
      value: (...args: Parameters<SqliteProjectionTarget['commit']>) => {
        counting.commits++;
        return target.commit(...args);
      },
    },
  });
  counting.commits = 0;
  return counting;
}

describe('ProjectionRunner on SQLite', () => {
  it('builds the view, activates it, follows new events, and keeps the position with the rows', async () => {
    const { database, store, target } = open();
    await placeOrders(store, 1, 4);
    const runner = new ProjectionRunner(store, target, ordersView, { batchSize: 3, pollIntervalMs: 50 });
    const events: ProjectionRunnerEvent[] = [];
    runner.events.on((event) => events.push(event));
    const running = runner.start();
    await runner.caughtUp;
    await waitUntil(async () => (await activeVersion(target, 'orders')) === 1, 'version 1 is active');
    assert.deepEqual(rows(database, 1), [
      { id: '1', status: 'placed', seats: 0 },
      { id: '2', status: 'confirmed', seats: 0 },
      { id: '3', status: 'placed', seats: 0 },
      { id: '4', status: 'confirmed', seats: 0 },
    ]);
    await placeOrders(store, 5, 6);
    await waitUntil(() => rows(database, 1).length === 6, 'live events are applied');
    const head = await store.headPosition();
    await waitUntil(() => runner.position === head, 'the runner reaches the head');
    // The last events are ones the view ignores: their position is stored within a second.
    await waitUntil(
      async () => (await target.versions('orders'))[0]?.position === head,
      'the position is stored',
    );
    assert.deepEqual(await runner.lag(), { events: 0, ms: 0, position: head });
    assert.ok(events.some((e) => e.type === 'batch-applied' && e.events === 3));
    await runner.stop();
    await running;
    assert.equal((await target.versions('orders'))[0]?.owner, undefined, 'the lease is given back');

    // A restart continues from the stored position: nothing is applied twice (the inserts would fail).
    await placeOrders(store, 7, 7);
    const again = new ProjectionRunner(store, target, ordersView, { pollIntervalMs: 50 });
    void again.start();
    await waitUntil(() => rows(database, 1).length === 7, 'the restarted runner applies only what is new');
    await again.stop();
  });

  it('goes on through outages of the event store and of the view database, with a store-error each time', async () => {
    const clock = new VirtualClock({ now: 1_750_000_000_000 });
    const { database, store: direct, target: directTarget } = open(clock);
    const storeOutage = withOutage(direct.backend, ['readAll']);
    const store = new EventStore({ backend: storeOutage.part, clock });
    const viewOutage = withOutage(directTarget, ['acquireLease']);
    await placeOrders(store, 1, 2);
    viewOutage.down = true;
    const runner = new ProjectionRunner(store, viewOutage.part, ordersView, { pollIntervalMs: 50 });
    const errors: Extract<ProjectionRunnerEvent, { type: 'store-error' }>[] = [];
    runner.events.on((event) => {
      if (event.type === 'store-error') errors.push(event);
    });
    let settled = false;
    const running = runner.start().finally(() => {
      settled = true;
    });
    const untilRetry = () => {
      const last = errors.at(-1) as { at: number; retryInMs: number };
      return last.at + last.retryInMs - clock.now();
    };
    // The view's database is down: no lease; then the event store too, once the lease is had.
    await waitUntil(() => errors.length === 1, 'the lease cannot be taken');
    for (let attempt = 2; attempt <= 4; attempt++) {
      await clock.advance(untilRetry() - 1);
      assert.equal(errors.length, attempt - 1, 'not before its backoff');
      await clock.advance(2);
      await waitUntil(() => errors.length === attempt, `failure ${attempt}`);
    }
    assert.equal(runner.storeFailures, 4);
    viewOutage.down = false;
    storeOutage.down = true;
    await clock.advance(untilRetry() + 1);
    await waitUntil(() => errors.length === 5, 'the read fails');
    assert.equal(runner.storeFailures, 1, 'the lease was taken: the count starts again');
    assert.equal(rows(database, 1).length, 0);
    storeOutage.down = false;
    await clock.advance(untilRetry() + 1);
    await runner.caughtUp;
    assert.equal(rows(database, 1).length, 2);
    assert.equal(runner.storeFailures, 0, 'healthy again');
    assert.ok(errors.every((e) => (e.error as { code?: string }).code === 'ECONNREFUSED'));

    // Down again while it follows: what was appended meanwhile is applied once it is back, once.
    storeOutage.down = true;
    await placeOrders(direct, 3, 3);
    await waitUntil(() => errors.length === 6, 'the read fails again');
    storeOutage.down = false;
    await clock.advance(untilRetry() + 1);
    await waitUntil(() => rows(database, 1).length === 3, 'the order placed during the outage');
    assert.equal(settled, false, 'it never stopped');
    await runner.stop();
    await running;
  });

  it('rebuilds a new version beside the old one, then swaps it in and retires the old runner', async () => {
    const { database, store, target } = open();
    await placeOrders(store, 1, 5);
    const v1 = new ProjectionRunner(store, target, ordersView, { pollIntervalMs: 20, leaseMs: 300 });
    const v1Events: ProjectionRunnerEvent[] = [];
    v1.events.on((event) => v1Events.push(event));
    const v1Running = v1.start();
    await v1.caughtUp;
    await waitUntil(async () => (await activeVersion(target, 'orders')) === 1, 'version 1 serves');
    const v2View = { ...ordersView, version: 2 };
    const v2 = new ProjectionRunner(store, target, v2View, { pollIntervalMs: 20, leaseMs: 300 });
    const v2Running = v2.start();
    await v2.caughtUp;
    await waitUntil(async () => (await activeVersion(target, 'orders')) === 2, 'version 2 took over');
    assert.deepEqual(
      rows(database, 2).map((row) => (row as { seats: number }).seats),
      [1, 2, 3, 4, 5],
    );
    await v1Running;
    assert.ok(
      v1Events.some((event) => event.type === 'retired'),
      'the old runner stopped itself',
    );
    await removeViewVersion(target, ordersView, 1);
    assert.deepEqual(
      (await target.versions('orders')).map((v) => [v.version, v.status]),
      [[2, 'active']],
    );
    assert.throws(() => rows(database, 1), /no such table/);
    await assert.rejects(removeViewVersion(target, v2View, 2), /active version/);
    await v2.stop();
    await v2Running;
  });

  it('lets one runner at a time write a view; a runner that lost its lease cannot commit', async () => {
    const clock = new VirtualClock({ now: 1_750_000_000_000 });
    const { database, store, target } = open(clock);
    await placeOrders(store, 1, 3);
    await target.prepare('orders', 1, (db) => ordersView.setup(db, 1));
    assert.equal(await target.acquireLease('orders', 1, 'paused-runner', clock.now(), 1000), true);
    const runner = new ProjectionRunner(store, target, ordersView, { leaseMs: 1000, pollIntervalMs: 100 });
    const lags: number[] = [];
    runner.events.on((event) => {
      if (event.type === 'batch-applied') lags.push(event.lagMs);
    });
    const running = runner.start();
    await waitUntil(
      async () => (await target.versions('orders')).length === 1 && clock.pendingTimers > 0,
      'the runner waits',
    );
    assert.deepEqual(rows(database, 1), [], 'nothing written while another runner holds the lease');
    await clock.advance(1500);
    await waitUntil(() => rows(database, 1).length === 3, 'the runner takes over once the lease expired');
    // The other lease ended at +1000 ms; the runner retries every leaseMs / 3 and applied the batch at its 4th try.
    assert.equal(lags.length, 1);
    assert.ok(Math.abs((lags[0] as number) - 4000 / 3) < 0.01, `lag ${lags[0]} ms`);
    const committed = await target.commit('orders', 1, 'paused-runner', 0, 99, 0, (db) => {
      db.prepare("INSERT INTO orders_v1 (id, status, seats) VALUES ('ghost', 'placed', 0)").run();
    });
    assert.equal(committed, false, 'the old owner is fenced off');
    assert.equal(rows(database, 1).length, 3);
    await runner.stop();
    await running;
  });

  it('hands applyBatch the relevant events of each batch together, never an empty list', async () => {
    const { database, store, target } = open();
    await placeOrders(store, 1, 4); // 10 events: 4 placed, 2 confirmed, 4 audit notes (passed over)
    const batches: number[][] = [];
    const runner = new ProjectionRunner(
      store,
      target,
      {
        ...ordersView,
        name: 'orders-batched',
        apply: undefined,
        applyBatch(db, events, version) {
          batches.push(events.map((event) => event.globalPosition));
          for (const event of events) ordersView.apply?.(db, event, version);
        },
      },
      { batchSize: 3, pollIntervalMs: 50 },
    );
    const running = runner.start();
    await runner.caughtUp;
    await runner.stop();
    await running;
    // Positions: order-1 placed 1, audit 2; order-2 placed 3, confirmed 4, audit 5; order-3 6, 7; order-4 8, 9, 10.
    // Read three at a time: [1 2 3] [4 5 6] [7 8 9] [10]; the last holds no order event, so no call.
    assert.deepEqual(batches, [
      [1, 3],
      [4, 6],
      [8, 9],
    ]);
    assert.equal(rows(database, 1).length, 4);
  });

  it('passes over events the view ignores without a commit per batch, and stores that position once a second', async () => {
    const clock = new VirtualClock({ now: 1_000_000 });
    const { database, store, target } = open(clock);
    const counting = countingCommits(target);
    for (let i = 1; i <= 20; i++) await store.appendToStream(`audit-${i}`, [{ type: 'Noted', data: {} }]);
    const runner = new ProjectionRunner(store, counting, ordersView, { batchSize: 1, pollIntervalMs: 5000 });
    const running = runner.start();
    await runner.caughtUp;
    assert.equal(
      counting.commits,
      0,
      '20 batches of ignored events, caught up within the second: no commit yet',
    );
    // The idle wait ends when the position is due (not at the 5 s poll): one commit of it.
    await clock.advance(999);
    assert.equal(counting.commits, 0);
    await clock.advance(1);
    await waitUntil(() => counting.commits === 1, 'the position is stored a second after the last store');
    assert.equal((await target.versions('orders'))[0]?.position, await store.headPosition());
    await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: { seats: 1 } }]);
    await waitUntil(() => rows(database, 1).length === 1, 'the relevant event is applied');
    assert.equal(counting.commits, 2);
    await runner.stop();
    await running;
  });

  it('stores the position passed over ignored events when it stops, not due yet', async () => {
    const clock = new VirtualClock({ now: 1_000_000 });
    const { store, target } = open(clock);
    const counting = countingCommits(target);
    for (let i = 1; i <= 5; i++) await store.appendToStream(`audit-${i}`, [{ type: 'Noted', data: {} }]);
    const runner = new ProjectionRunner(store, counting, ordersView, { pollIntervalMs: 5000 });
    const running = runner.start();
    await runner.caughtUp;
    assert.equal(counting.commits, 0);
    await runner.stop();
    await running;
    assert.equal(counting.commits, 1);
    assert.equal((await target.versions('orders'))[0]?.position, await store.headPosition());
  });

  it('with appendDelayMs, applies a burst of appends after the delay in one commit', async () => {
    const clock = new VirtualClock({ now: 1_000_000 });
    const { database, store, target } = open(clock);
    const counting = countingCommits(target);
    const runner = new ProjectionRunner(store, counting, ordersView, {
      pollIntervalMs: 50,
      appendDelayMs: 20,
    });
    const running = runner.start();
    await runner.caughtUp;
    const before = counting.commits;
    for (let i = 1; i <= 3; i++)
      await store.appendToStream(`order-${i}`, [{ type: 'OrderPlaced', data: { seats: i } }]);
    await waitUntil(
      () => clock.pendingTimers > 0 && rows(database, 1).length === 0,
      'the runner waits out the delay',
    );
    await clock.advance(20);
    await waitUntil(() => rows(database, 1).length === 3, 'the burst is applied');
    assert.equal(counting.commits - before, 1);
    await runner.stop();
    await running;
  });

  it('refuses an asynchronous apply on SQLite and bad options', async () => {
    const { store, target } = open();
    await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: { seats: 1 } }]);
    const runner = new ProjectionRunner(store, target, {
      ...ordersView,
      name: 'async',
      apply: async () => {},
    });
    await assert.rejects(runner.start(), /synchronously/);
    assert.throws(() => new ProjectionRunner(store, target, { ...ordersView, version: 0 }), /version/);
    assert.throws(
      () => new ProjectionRunner(store, target, { ...ordersView, applyBatch: () => {} }),
      /either apply or applyBatch/,
    );
    assert.throws(
      () => new ProjectionRunner(store, target, { ...ordersView, apply: undefined }),
      /either apply or applyBatch/,
    );
    assert.throws(() => new ProjectionRunner(store, target, ordersView, { batchSize: 0 }), /batchSize/);
    assert.throws(() => new SqliteProjectionTarget({ database: {} as never }), /database/);
  });
});
