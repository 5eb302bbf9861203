import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite, type SqliteDriverName, sqliteDriverAvailable } from '@stratus/sql';
import { countStatementRuns } from '@stratus/testkit';
import { EventStoreClosedError, WrongExpectedVersionError } from '../errors.js';
import { eventStoreBackendContract } from '../event-store-backend.contract.js';
import { subscriptionContract } from '../subscription.contract.js';
import { SqliteEventStoreBackend } from './sqlite-event-store.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-sqlite-event-store-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;
const freshPath = () => join(directory, `test-${++files}.db`);
const T0 = 1_750_000_000_000;

for (const driver of ['node:sqlite', 'better-sqlite3'] as const satisfies SqliteDriverName[]) {
  const available = sqliteDriverAvailable(driver);
  if (available !== true) {
    describe(`EventStoreBackend contract: sqlite (${driver})`, { skip: available }, () => {});
    continue;
  }
  eventStoreBackendContract(
    `sqlite (${driver})`,
    async () => new SqliteEventStoreBackend({ path: freshPath(), driver }),
  );
  subscriptionContract(
    `sqlite (${driver})`,
    async () => new SqliteEventStoreBackend({ path: freshPath(), driver }),
  );
}

describe('SqliteEventStoreBackend', () => {
  it('validates its options', () => {
    assert.throws(() => new SqliteEventStoreBackend({}), /path/);
    assert.throws(() => new SqliteEventStoreBackend({ path: '' }), /path/);
    assert.throws(
      () => new SqliteEventStoreBackend({ path: freshPath(), watchIntervalMs: 0 }),
      /watchIntervalMs/,
    );
    assert.throws(() => new SqliteEventStoreBackend({ database: {} as never }), /database/);
  });

  it('shares a database: an append rolled back with the outer transaction leaves nothing behind', async () => {
    const database = openSqlite(freshPath());
    const store = new SqliteEventStoreBackend({ database });
    database.exec('CREATE TABLE orders (id TEXT PRIMARY KEY)');
    const event = { id: 'e-1', type: 'Placed', data: '{}', metadata: '{}', schemaVersion: 1 };
    await assert.rejects(
      database.transactionAsync(() => {
        database.prepare('INSERT INTO orders (id) VALUES (?)').run('o-1');
        // Inside an open transaction the append joins it (its promise settles at once).
        void store.append({ streamName: 'order-1', expectedVersion: 'no-stream', events: [event], now: T0 });
        const row = database
          .prepare('SELECT version FROM es_streams WHERE name = ?')
          .get<{ version: number }>('order-1');
        assert.equal(row?.version, 1, 'the append ran inside the transaction');
        throw new Error('business rule failed');
      }),
      /business rule failed/,
    );
    assert.equal(await store.streamVersion('order-1'), 0);
    assert.equal(database.prepare('SELECT count(*) AS n FROM orders').get<{ n: number }>()?.n, 0);
    await store.close();
    assert.equal(database.isOpen, true, 'a database the caller gave stays open');
    database.close();
  });

  it('groups concurrent appends into one transaction; a refused one does not undo the others', async () => {
    const database = openSqlite(freshPath());
    const store = new SqliteEventStoreBackend({ database });
    let transactions = 0;
    const transactionAsync = database.transactionAsync.bind(database);
    database.transactionAsync = (fn) => {
      transactions++;
      return transactionAsync(fn);
    };
    const event = (id: string) => ({ id, type: 'Placed', data: '{}', metadata: '{}', schemaVersion: 1 });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        store.append({
          streamName: `order-${i}`,
          // The eighth expects a stream that does not exist yet.
          expectedVersion: i === 7 ? 3 : 'no-stream',
          events: [event(`e-${i}`), event(`f-${i}`)],
          now: T0,
        }),
      ),
    );
    assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 19);
    const refused = outcomes[7] as PromiseRejectedResult;
    assert.ok(refused.reason instanceof WrongExpectedVersionError);
    assert.ok(transactions <= 2, `20 appends took ${transactions} transactions`);
    assert.equal(await store.streamVersion('order-7'), 0);
    assert.equal(await store.streamVersion('order-8'), 2);
    assert.equal((await store.readAll({ after: 0 })).length, 38);
    await store.close();
    database.close();
  });

  it('on a database with group commit, an immediate append commits at once instead of with the turn', async () => {
    const database = openSqlite(freshPath(), { groupCommit: true });
    const store = new SqliteEventStoreBackend({ database });
    const other = new SqliteEventStoreBackend({ path: database.path });
    const event = (id: string) => ({ id, type: 'Placed', data: '{}', metadata: '{}', schemaVersion: 1 });
    const append = (stream: string, immediate: boolean) =>
      store.append({
        streamName: stream,
        expectedVersion: 'any',
        events: [event(stream)],
        now: T0,
        immediate,
      });
    const grouped = append('order-1', false);
    const immediate = append('order-2', true);
    assert.equal(await other.streamVersion('order-2'), 1, 'committed before the turn ended');
    assert.equal(await other.streamVersion('order-1'), 0, 'still waiting for the group');
    await Promise.all([grouped, immediate]);
    assert.equal(await other.streamVersion('order-1'), 1);
    await other.close();
    await store.close();
    database.close();
  });

  it("on a database with group commit, appends join the turn's commit even while another is pending", async () => {
    const database = openSqlite(freshPath(), { groupCommit: true });
    const store = new SqliteEventStoreBackend({ database });
    const event = (id: string) => ({ id, type: 'Placed', data: '{}', metadata: '{}', schemaVersion: 1 });
    const append = (i: number, expectedVersion: 'no-stream' | number) =>
      store.append({ streamName: `order-${i}`, expectedVersion, events: [event(`e-${i}`)], now: T0 });
    await append(0, 'no-stream');
    const commits = countStatementRuns(database, 'COMMIT');
    const first = append(1, 'no-stream');
    // The first append is handed to the database's group by now; grouping appends in the store as well would hold
    // the next ones back until that group committed, and they would take a commit of their own.
    await Promise.resolve();
    await Promise.resolve();
    const outcomes = await Promise.allSettled([first, append(2, 5), append(3, 'no-stream')]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.ok((outcomes[1] as PromiseRejectedResult).reason instanceof WrongExpectedVersionError);
    assert.equal(commits.count, 1, 'one commit for the turn');
    assert.equal(await store.streamVersion('order-2'), 0);
    assert.equal(await store.streamVersion('order-3'), 1);
    await store.close();
    database.close();
  });

  describe('reading the head from the events this connection committed', () => {
    const event = (id: string, n: number) => ({
      id,
      type: 'Placed',
      data: JSON.stringify({ n }),
      metadata: '{}',
      schemaVersion: 1,
    });
    /** Counts the queries that read events from the table by position. */
    function countingReads(database: ReturnType<typeof openSqlite>) {
      const counter = { reads: 0 };
      const prepare = database.prepare.bind(database);
      database.prepare = (sql) => {
        if (sql.includes('FROM es_events WHERE position >')) counter.reads++;
        return prepare(sql);
      };
      return counter;
    }
    const append = (store: SqliteEventStoreBackend, stream: string, ids: string[], from: number) =>
      store.append({
        streamName: stream,
        expectedVersion: 'any',
        events: ids.map((id, i) => event(id, from + i)),
        now: T0,
      });
    const numbers = (events: readonly { data: unknown }[]) => events.map((e) => (e.data as { n: number }).n);

    it('serves them without a query, one decoded event shared by every reader', async () => {
      const database = openSqlite(freshPath());
      const store = new SqliteEventStoreBackend({ database });
      const counter = countingReads(database);
      await append(store, 'order-1', ['a', 'b', 'c'], 1);
      const first = await store.readAll({ after: 0 });
      const second = await store.readAll({ after: 1, maxCount: 1 });
      assert.deepEqual(numbers(first), [1, 2, 3]);
      assert.deepEqual(numbers(second), [2]);
      assert.equal(second[0], first[1], 'the same event object');
      assert.deepEqual(await store.readAll({ after: 3 }), []);
      assert.equal(counter.reads, 0);
      // What the table holds, read through another connection, is the same.
      const other = new SqliteEventStoreBackend({ path: database.path });
      assert.deepEqual(await other.readAll({ after: 0 }), first);
      await other.close();
      await store.close();
      database.close();
    });

    it('reads what another connection appended once, for every reader', async () => {
      const path = freshPath();
      const database = openSqlite(path);
      const store = new SqliteEventStoreBackend({ database });
      const other = new SqliteEventStoreBackend({ path });
      const counter = countingReads(database);
      const otherCounter = countingReads(other.database);
      await append(store, 'order-1', ['a', 'b'], 1);
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1, 2], 'a reader follows the tail');
      await append(other, 'order-2', ['c', 'd'], 3);
      // This connection's next append closes the gap with one query.
      await append(store, 'order-1', ['e'], 5);
      assert.equal(counter.reads, 1);
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1, 2, 3, 4, 5]);
      assert.deepEqual(numbers(await store.readAll({ after: 2 })), [3, 4, 5]);
      assert.equal(counter.reads, 1);
      // An append of the other connection alone is read by the first reader, and served to the next.
      await append(other, 'order-2', ['f', 'g'], 6);
      const first = await store.readAll({ after: 5 });
      assert.deepEqual(numbers(first), [6, 7]);
      assert.equal(counter.reads, 2);
      const second = await store.readAll({ after: 4 });
      assert.deepEqual(numbers(second), [5, 6, 7]);
      assert.equal(second[1], first[0], 'the same event object');
      assert.equal(counter.reads, 2);
      // Nobody reads through the other connection: its appends leave the gaps to the table.
      await append(other, 'order-2', ['h'], 8);
      assert.equal(otherCounter.reads, 0);
      await other.close();
      await store.close();
      database.close();
    });

    it('reads events older than the tail from the table', async () => {
      const path = freshPath();
      const other = new SqliteEventStoreBackend({ path });
      await append(other, 'order-2', ['a', 'b'], 1);
      const database = openSqlite(path);
      const store = new SqliteEventStoreBackend({ database });
      const counter = countingReads(database);
      await append(store, 'order-1', ['c'], 3);
      assert.equal(counter.reads, 0, 'a new tail starts at its first append');
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1, 2, 3]);
      assert.equal(counter.reads, 1);
      await other.close();
      await store.close();
      database.close();
    });

    it('never serves an append whose transaction was rolled back', async () => {
      const database = openSqlite(freshPath());
      const store = new SqliteEventStoreBackend({ database });
      await append(store, 'order-1', ['a'], 1);
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1]);
      // A transaction begun outside SqliteDatabase: the append joins it and cannot see its end.
      database.exec('BEGIN IMMEDIATE');
      await append(store, 'order-1', ['b', 'c'], 2);
      database.exec('ROLLBACK');
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1]);
      await append(store, 'order-1', ['d'], 4);
      assert.deepEqual(numbers(await store.readAll({ after: 0 })), [1, 4]);
      assert.deepEqual(numbers(await store.readAll({ after: 1 })), [4]);
      await store.close();
      database.close();
    });
  });

  it('sees appends made through another connection to the same file', async () => {
    const path = freshPath();
    const writer = new SqliteEventStoreBackend({ path });
    const reader = new SqliteEventStoreBackend({ path, watchIntervalMs: 5 });
    let woken!: () => void;
    const wake = new Promise<void>((resolve) => {
      woken = resolve;
    });
    const stop = await reader.watch(() => woken());
    await writer.append({
      streamName: 'order-9',
      expectedVersion: 'any',
      events: [{ id: 'x-1', type: 'Placed', data: '{"n":1}', metadata: '{}', schemaVersion: 1 }],
      now: T0,
    });
    await wake;
    stop();
    assert.deepEqual(
      (await reader.readAll()).map((e) => e.data),
      [{ n: 1 }],
    );
    await writer.close();
    await reader.close();
    await assert.rejects(reader.readAll(), EventStoreClosedError);
  });
});
