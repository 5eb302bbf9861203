import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError, startWorkerThread } from '@stratus/core';
import { countStatementRuns, waitUntil } from '@stratus/testkit';
import {
  migrateSqlite,
  openSqlite,
  type SqliteDatabase,
  SqliteDriverError,
  type SqliteDriverName,
  schemaVersion,
  sqliteDriverAvailable,
  sqliteThreadLock,
  wrapSqlite,
} from '../index.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-sqlite-driver-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;
const freshPath = () => join(directory, `driver-${++files}.db`);

function withDatabase(driver: SqliteDriverName, run: (db: SqliteDatabase) => void | Promise<void>) {
  return async () => {
    const db = openSqlite(freshPath(), { driver });
    try {
      await run(db);
    } finally {
      db.close();
    }
  };
}

/** A connection with group commit and another on the same file, sharing table t. */
function groupCommitPair(driver: SqliteDriverName) {
  const path = freshPath();
  const db = openSqlite(path, { driver, checkpoint: 'inline', groupCommit: true });
  const other = openSqlite(path, { driver, checkpoint: 'inline' });
  db.exec('CREATE TABLE t (v TEXT)');
  return {
    db,
    other,
    insert: (v: string) => db.prepare('INSERT INTO t (v) VALUES (?)').run(v),
    close() {
      db.close();
      other.close();
    },
  };
}

/** SQLite's busy timeout on a driver handle, read past the interface (which would set it back first). */
function handleBusyTimeout(handle: unknown): number | undefined {
  const row = (handle as { prepare(sql: string): { get(): unknown } }).prepare('PRAGMA busy_timeout').get();
  return (row as { timeout: number } | undefined)?.timeout;
}

const count = (db: SqliteDatabase) => db.prepare('SELECT count(*) AS n FROM t').get<{ n: number }>()?.n;

for (const driver of ['node:sqlite', 'better-sqlite3'] as const satisfies SqliteDriverName[]) {
  const available = sqliteDriverAvailable(driver);
  describe(`SQLite driver: ${driver}`, { skip: available === true ? false : available }, () => {
    it(
      'configures the connection for sharing the file between processes',
      withDatabase(driver, (db) => {
        assert.equal(db.driver, driver);
        const pragma = (name: string) => Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0];
        assert.equal(pragma('journal_mode'), 'wal');
        assert.equal(pragma('synchronous'), 1, 'NORMAL');
        assert.equal(pragma('busy_timeout'), 5000);
        assert.equal(pragma('foreign_keys'), 1);
        assert.equal(pragma('cache_size'), -65536, 'a 64 MiB page cache');
        assert.equal(db.busyTimeoutMs, 5000);
      }),
    );

    it('applies the synchronous, busy timeout, foreign key and cache size options', () => {
      const db = openSqlite(freshPath(), {
        driver,
        synchronous: 'FULL',
        busyTimeoutMs: 250,
        foreignKeys: false,
        cacheSizeKiB: 512,
      });
      try {
        assert.equal(db.prepare('PRAGMA synchronous').get<{ synchronous: number }>()?.synchronous, 2);
        assert.equal(db.prepare('PRAGMA busy_timeout').get<{ timeout: number }>()?.timeout, 250);
        assert.equal(db.prepare('PRAGMA foreign_keys').get<{ foreign_keys: number }>()?.foreign_keys, 0);
        assert.equal(db.prepare('PRAGMA cache_size').get<{ cache_size: number }>()?.cache_size, -512);
      } finally {
        db.close();
      }
    });

    it(
      'runs positional statements, caches them, and returns numbers and Uint8Arrays',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, x REAL, s TEXT, b BLOB)');
        const insert = db.prepare('INSERT INTO t (n, x, s, b) VALUES (?, ?, ?, ?)');
        assert.equal(db.prepare('INSERT INTO t (n, x, s, b) VALUES (?, ?, ?, ?)'), insert, 'cached');
        assert.deepEqual(insert.run(2 ** 40, 1.5, 'text', new Uint8Array([1, 2, 3])), {
          changes: 1,
          lastInsertRowid: 1,
        });
        insert.run(null, null, null, null);
        const row = db.prepare('SELECT n, x, s, b FROM t WHERE id = ?').get<Record<string, unknown>>(1);
        assert.equal(row?.n, 2 ** 40);
        assert.equal(row?.x, 1.5);
        assert.equal(row?.s, 'text');
        assert.equal(Object.getPrototypeOf(row?.b), Uint8Array.prototype, 'a plain Uint8Array, not a Buffer');
        assert.deepEqual(row?.b, new Uint8Array([1, 2, 3]));
        const rows = db.prepare('SELECT b FROM t ORDER BY id').all<{ b: Uint8Array | null }>();
        assert.equal(Object.getPrototypeOf(rows[0]?.b), Uint8Array.prototype);
        assert.equal(rows[1]?.b, null);
        assert.equal(db.prepare('SELECT s FROM t WHERE id = ?').get(99), undefined);
        assert.equal(db.prepare('UPDATE t SET n = 0').run().changes, 2);
      }),
    );

    it(
      'commits a transaction, and rolls it back when fn throws',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (v TEXT)');
        const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
        assert.equal(
          db.transaction(() => {
            insert.run('a');
            assert.equal(db.inTransaction, true);
            return 'result';
          }),
          'result',
        );
        assert.equal(db.inTransaction, false);
        assert.throws(
          () =>
            db.transaction(() => {
              insert.run('b');
              throw new Error('boom');
            }),
          /boom/,
        );
        assert.equal(db.inTransaction, false);
        assert.equal(count(db), 1);
      }),
    );

    it(
      'runs a nested transaction in a savepoint: its error undoes only its own writes',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (v TEXT)');
        const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
        db.transaction(() => {
          insert.run('outer');
          assert.throws(() =>
            db.transaction(() => {
              insert.run('inner');
              throw new Error('inner fails');
            }),
          );
          db.transaction(() => insert.run('inner ok'));
        });
        assert.deepEqual(
          db
            .prepare('SELECT v FROM t ORDER BY rowid')
            .all<{ v: string }>()
            .map((r) => r.v),
          ['outer', 'inner ok'],
        );
      }),
    );

    it(
      'joins a transaction begun outside it',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (v TEXT)');
        db.exec('BEGIN');
        db.transaction(() => db.prepare('INSERT INTO t (v) VALUES (?)').run('joined'));
        assert.equal(db.inTransaction, true, 'the outer transaction is still open');
        db.exec('ROLLBACK');
        assert.equal(count(db), 0);
      }),
    );

    it(
      'refuses an async fn and rolls back what it wrote',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (v TEXT)');
        assert.throws(
          () =>
            db.transaction(async () => {
              db.prepare('INSERT INTO t (v) VALUES (?)').run('x');
            }),
          /synchronous/,
        );
        assert.equal(count(db), 0);
        assert.equal(db.inTransaction, false);
      }),
    );

    it(
      'runs after-commit callbacks after the outermost commit, and drops them on rollback',
      withDatabase(driver, (db) => {
        db.exec('CREATE TABLE t (v TEXT)');
        const calls: string[] = [];
        db.afterCommit(() => calls.push('outside'));
        assert.deepEqual(calls, ['outside'], 'at once outside a transaction');
        db.transaction(() => {
          db.afterCommit(() => calls.push('outer'));
          db.transaction(() => db.afterCommit(() => calls.push('inner')));
          assert.throws(() =>
            db.transaction(() => {
              db.afterCommit(() => calls.push('rolled back savepoint'));
              throw new Error('undo');
            }),
          );
          assert.deepEqual(calls, ['outside'], 'nothing before the commit');
        });
        assert.throws(() =>
          db.transaction(() => {
            db.afterCommit(() => calls.push('rolled back'));
            throw new Error('undo');
          }),
        );
        assert.deepEqual(calls, ['outside', 'outer', 'inner']);
      }),
    );

    it('waits for another connection’s write lock without blocking the event loop', async () => {
      const path = freshPath();
      const holder = openSqlite(path, { driver, checkpoint: 'inline' });
      const waiter = openSqlite(path, { driver, checkpoint: 'inline', busyTimeoutMs: 5000 });
      try {
        holder.exec('CREATE TABLE t (v TEXT)');
        holder.exec('BEGIN IMMEDIATE');
        let settled = false;
        const write = waiter.transactionAsync(() => waiter.prepare('INSERT INTO t (v) VALUES (?)').run('w'));
        write.finally(() => {
          settled = true;
        });
        // A blocking wait would hold this thread until the busy timeout, so the holder could never commit.
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(settled, false, 'still waiting for the lock');
        holder.exec('COMMIT');
        assert.equal((await write).changes, 1);
        assert.equal(count(waiter), 1);
      } finally {
        holder.close();
        waiter.close();
      }
    });

    it('with groupCommit, commits the transactionAsync calls of one turn together, each undoing only its own error', async () => {
      const { db, other, insert, close } = groupCommitPair(driver);
      try {
        const seen: number[] = [];
        const calls = [
          db.transactionAsync(() => insert('a')),
          db.transactionAsync(() => {
            insert('b');
            throw new Error('b refused');
          }),
          db.transactionAsync(() => {
            // The same transaction: this connection sees a, the other does not yet.
            seen.push(count(db) ?? -1, count(other) ?? -1);
            return insert('c').changes;
          }),
        ];
        assert.equal(count(db), 0, 'nothing runs before the turn ends');
        const [a, b, c] = await Promise.allSettled(calls);
        assert.equal(a?.status, 'fulfilled');
        assert.equal(b?.status, 'rejected');
        assert.match(String((b as PromiseRejectedResult).reason), /b refused/);
        assert.deepEqual(c, { status: 'fulfilled', value: 1 });
        assert.deepEqual(seen, [1, 0]);
        assert.deepEqual(
          other
            .prepare('SELECT v FROM t ORDER BY v')
            .all<{ v: string }>()
            .map((row) => row.v),
          ['a', 'c'],
          'committed once settled',
        );
        // Run again in a later turn: a group of one.
        assert.equal((await db.transactionAsync(() => insert('d'))).changes, 1);
        assert.equal(count(other), 3);
      } finally {
        close();
      }
    });

    it('with groupCommit, commits an immediate transactionAsync at once, alone, without waiting for the turn', async () => {
      const { db, other, insert, close } = groupCommitPair(driver);
      try {
        const grouped = db.transactionAsync(() => insert('grouped'));
        const immediate = db.transactionAsync(() => insert('immediate'), { immediate: true });
        assert.equal(count(other), 1, 'the immediate one committed before the turn ended');
        await Promise.all([grouped, immediate]);
        assert.equal(count(other), 2);
      } finally {
        close();
      }
    });

    it('with groupCommit, commits eager transactionAsync calls made together once their microtasks are done', async () => {
      const { db, other, insert, close } = groupCommitPair(driver);
      try {
        let turnEnded = false;
        setImmediate(() => {
          turnEnded = true;
        });
        const seen: number[] = [];
        const together = [
          db.transactionAsync(() => insert('a'), { eager: true }),
          db.transactionAsync(
            () => {
              // The same transaction as a: this connection sees it, the other does not yet.
              seen.push(count(db) ?? -1, count(other) ?? -1);
              return insert('b').changes;
            },
            { eager: true },
          ),
        ];
        assert.equal(count(db), 0, 'nothing runs while the code that made the calls runs');
        await Promise.all(together);
        assert.equal(turnEnded, false, 'committed before the turn ended');
        assert.deepEqual(seen, [1, 0]);
        assert.equal(count(other), 2);
        // A group already waiting for the end of the turn is joined, not committed early.
        const grouped = db.transactionAsync(() => insert('c'));
        const eager = db.transactionAsync(() => insert('d'), { eager: true });
        await Promise.resolve();
        assert.equal(count(other), 2, 'the eager call waits with the group');
        await Promise.all([grouped, eager]);
        assert.equal(count(other), 4);
      } finally {
        close();
      }
    });

    it('with a thread lock, waits for another thread’s transaction to end instead of asking SQLite again and again', async () => {
      const threadLock = sqliteThreadLock();
      const word = new Int32Array(threadLock);
      const db = openSqlite(freshPath(), { driver, checkpoint: 'inline', groupCommit: true, threadLock });
      try {
        db.exec('CREATE TABLE t (v TEXT)');
        const begins = countStatementRuns(db, 'BEGIN IMMEDIATE');
        // Another thread of the process writes (as its driver marks it between BEGIN IMMEDIATE and the end).
        Atomics.store(word, 0, 1);
        let heldInside = -1;
        const write = db.transactionAsync(() => {
          heldInside = Atomics.load(word, 0);
          return db.prepare('INSERT INTO t (v) VALUES (?)').run('a');
        });
        for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(begins.count, 0, 'SQLite is not asked while the other thread writes');
        Atomics.store(word, 0, 0);
        Atomics.notify(word, 0);
        await write;
        assert.equal(begins.count, 1);
        assert.equal(heldInside, 1, 'marked while its own transaction is open');
        assert.equal(Atomics.load(word, 0), 0, 'cleared when it ended');
        // A mark nobody clears (a thread that died writing) holds a writer up for a moment only.
        Atomics.store(word, 0, 1);
        await db.transactionAsync(() => db.prepare('INSERT INTO t (v) VALUES (?)').run('b'));
        assert.equal(count(db), 2);
        assert.equal(Atomics.load(word, 0), 0);
      } finally {
        db.close();
      }
    });

    it('with a thread lock, two threads writing one file at once lose no write', async () => {
      const path = freshPath();
      const threadLock = sqliteThreadLock();
      const db = openSqlite(path, { driver, checkpoint: 'inline', groupCommit: true, threadLock });
      try {
        db.exec('CREATE TABLE t (v TEXT)');
        const begins = countStatementRuns(db, 'BEGIN IMMEDIATE');
        const commits = countStatementRuns(db, 'COMMIT');
        // Long transactions on both sides: a writer waiting by polling would ask many times per commit.
        const transactions = 200;
        const rows = 200;
        const thread = startWorkerThread(new URL('./fixtures/writer-thread.ts', import.meta.url), {
          workerData: { path, threadLock, transactions, rows },
        });
        const said = (type: string) =>
          new Promise<void>((resolve, reject) => {
            const listener = (message: { type: string }) => {
              if (message.type !== type) return;
              thread.off('message', listener);
              resolve();
            };
            thread.on('message', listener);
            thread.once('error', reject);
          });
        await said('ready');
        const done = said('done');
        thread.postMessage('go');
        for (let i = 0; i < transactions; i++)
          await db.transactionAsync(() => {
            for (let row = 0; row < rows; row++)
              db.prepare('INSERT INTO t (v) VALUES (?)').run(`main-${i}-${row}`);
          });
        await done;
        await thread.terminate();
        assert.equal(count(db), 2 * transactions * rows);
        // Each write asked SQLite about once (polling instead asked 2–3 times per commit here).
        assert.ok(begins.count < 1.5 * commits.count, `${begins.count} BEGINs for ${commits.count} commits`);
      } finally {
        db.close();
      }
    });

    it('with groupCommit, waits for another connection’s write lock, then commits the group or gives up', async () => {
      const path = freshPath();
      const holder = openSqlite(path, { driver, checkpoint: 'inline' });
      const waiter = openSqlite(path, {
        driver,
        checkpoint: 'inline',
        busyTimeoutMs: 5000,
        groupCommit: true,
      });
      const impatient = openSqlite(path, {
        driver,
        checkpoint: 'inline',
        busyTimeoutMs: 30,
        groupCommit: true,
      });
      try {
        holder.exec('CREATE TABLE t (v TEXT)');
        holder.exec('BEGIN IMMEDIATE');
        const insert = (v: string) => waiter.prepare('INSERT INTO t (v) VALUES (?)').run(v).changes;
        const writes = [
          waiter.transactionAsync(() => insert('x')),
          waiter.transactionAsync(() => insert('y')),
        ];
        await assert.rejects(
          impatient.transactionAsync(() => 'never'),
          /database is locked/,
        );
        assert.equal(count(waiter), 0, 'still waiting for the lock');
        holder.exec('COMMIT');
        assert.deepEqual(await Promise.all(writes), [1, 1]);
        assert.equal(count(holder), 2);
      } finally {
        holder.close();
        waiter.close();
        impatient.close();
      }
    });

    it('with groupCommit, runs the transactions still queued when the database closes', async () => {
      const db = openSqlite(freshPath(), { driver, checkpoint: 'inline', groupCommit: true });
      db.exec('CREATE TABLE t (v TEXT)');
      const write = db.transactionAsync(() => db.prepare('INSERT INTO t (v) VALUES (?)').run('x').changes);
      db.close();
      assert.equal(await write, 1);
    });

    it('gives up waiting for the write lock after busyTimeoutMs with SQLITE_BUSY', async () => {
      const path = freshPath();
      const holder = openSqlite(path, { driver, checkpoint: 'inline' });
      const waiter = openSqlite(path, { driver, checkpoint: 'inline', busyTimeoutMs: 30 });
      try {
        holder.exec('CREATE TABLE t (v TEXT)');
        holder.exec('BEGIN IMMEDIATE');
        await assert.rejects(
          waiter.transactionAsync(() => 'never'),
          /database is locked/,
        );
        assert.equal(waiter.inTransaction, false);
        assert.equal(
          waiter.prepare('PRAGMA busy_timeout').get<{ timeout: number }>()?.timeout,
          30,
          'restored',
        );
        holder.exec('ROLLBACK');
      } finally {
        holder.close();
        waiter.close();
      }
    });

    it('leaves the busy timeout at 0 between asynchronous transactions, and sets it back before a statement that may wait', async () => {
      const path = freshPath();
      const db = openSqlite(path, { driver, checkpoint: 'inline', busyTimeoutMs: 60 });
      const holder = openSqlite(path, { driver, checkpoint: 'inline' });
      const insert = () => db.prepare('INSERT INTO t (v) VALUES (?)').run('x');
      /** Waits for the write lock `holder` keeps; throws SQLITE_BUSY; returns how long it waited. */
      const waitedFor = (write: () => unknown) => {
        holder.exec('BEGIN IMMEDIATE');
        const started = performance.now();
        try {
          assert.throws(write, /database is locked/);
          return performance.now() - started;
        } finally {
          holder.exec('ROLLBACK');
        }
      };
      try {
        db.exec('CREATE TABLE t (v TEXT)');
        const lowerings = countStatementRuns(db, 'PRAGMA busy_timeout = 0');
        for (let i = 0; i < 3; i++) await db.transactionAsync(insert);
        assert.equal(lowerings.count, 1, 'lowered once for three transactions');
        assert.equal(handleBusyTimeout(db.handle), 0);
        assert.ok(waitedFor(insert) >= 50, 'a statement outside a transaction waits for the lock');
        assert.equal(handleBusyTimeout(db.handle), 60);
        await db.transactionAsync(insert);
        assert.equal(handleBusyTimeout(db.handle), 0);
        assert.ok(waitedFor(() => db.transaction(insert)) >= 50, 'so does the synchronous transaction');
        await db.transactionAsync(insert);
        assert.equal(db.prepare('PRAGMA busy_timeout').get<{ timeout: number }>()?.timeout, 60);
        // A wrapped handle stays as its owner set it: they may use it directly.
        const wrapped = wrapSqlite(holder.handle, { busyTimeoutMs: 70 });
        await wrapped.transactionAsync(() => wrapped.prepare('INSERT INTO t (v) VALUES (?)').run('w'));
        assert.equal(handleBusyTimeout(holder.handle), 70);
      } finally {
        db.close();
        holder.close();
      }
    });

    it('waits for its background RESTART checkpoint to end instead of asking SQLite again and again', async () => {
      const path = freshPath();
      // A RESTART after every write, waiting up to 10 s for readers to leave the WAL (with the write lock held).
      const db = openSqlite(path, {
        driver,
        checkpoint: { intervalMs: 5, restartPages: 1, maxStallMs: 10_000 },
      });
      const reader = openSqlite(path, { driver, checkpoint: 'inline' });
      const probe = openSqlite(path, { driver, checkpoint: 'inline', busyTimeoutMs: 0 });
      const writeLockTaken = () => {
        try {
          probe.exec('BEGIN IMMEDIATE');
        } catch {
          return true;
        }
        probe.exec('ROLLBACK');
        return false;
      };
      try {
        db.exec('CREATE TABLE t (v TEXT)');
        const insert = () => db.prepare('INSERT INTO t (v) VALUES (?)').run('x');
        reader.exec('BEGIN');
        reader.prepare('SELECT count(*) FROM t').get();
        // A write the checkpoint cannot copy while the reader's snapshot is older: its RESTART waits for it.
        await db.transactionAsync(insert);
        await waitUntil(writeLockTaken, 'the RESTART holds the write lock', 10_000);
        const begins = countStatementRuns(db, 'BEGIN IMMEDIATE');
        const started = performance.now();
        const write = db.transactionAsync(insert);
        await new Promise((resolve) => setTimeout(resolve, 200));
        reader.exec('COMMIT');
        await write;
        const waitedMs = performance.now() - started;
        assert.ok(waitedMs >= 150, `the write waited for the checkpoint (${waitedMs} ms)`);
        // Woken when the RESTART ends; asking SQLite only when a 50 ms wait runs out (polling asked every ms).
        assert.ok(begins.count <= 2 + waitedMs / 50, `${begins.count} BEGINs in ${Math.round(waitedMs)} ms`);
        assert.equal(count(db), 2);
      } finally {
        db.close();
        reader.close();
        probe.close();
      }
    });

    it('copies the WAL into the database file from a worker thread', async () => {
      const path = freshPath();
      const db = openSqlite(path, { driver });
      try {
        const autocheckpoint = db.prepare('PRAGMA wal_autocheckpoint').get<{ wal_autocheckpoint: number }>();
        assert.ok(
          (autocheckpoint?.wal_autocheckpoint ?? 0) > 1000,
          'this connection only checkpoints as a backstop',
        );
        db.exec('CREATE TABLE t (v BLOB)');
        const before = statSync(path).size;
        const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
        db.transaction(() => {
          for (let i = 0; i < 100; i++) insert.run(new Uint8Array(4096));
        });
        await waitUntil(
          () => statSync(path).size > before + 100 * 4096,
          'the worker checkpointed the WAL',
          10_000,
        );
      } finally {
        db.close();
      }
    });

    it('wraps a handle opened by the caller', () => {
      const raw = openSqlite(freshPath(), { driver });
      try {
        const wrapped = wrapSqlite(raw.handle, { busyTimeoutMs: 100 });
        assert.equal(wrapped.driver, driver);
        assert.equal(wrapped.busyTimeoutMs, 100);
        wrapped.exec('CREATE TABLE t (v TEXT)');
        wrapped.transaction(() => wrapped.prepare('INSERT INTO t (v) VALUES (?)').run('x'));
        assert.equal(count(raw), 1);
      } finally {
        raw.close();
      }
    });

    it(
      'migrates a component once, step by step, and records its version',
      withDatabase(driver, (db) => {
        assert.equal(schemaVersion(db, 'demo'), 0);
        const steps = ['CREATE TABLE demo_a (x)', 'CREATE TABLE demo_b (y)'];
        migrateSqlite(db, 'demo', steps.slice(0, 1));
        assert.equal(schemaVersion(db, 'demo'), 1);
        migrateSqlite(db, 'demo', steps);
        migrateSqlite(db, 'demo', steps);
        assert.equal(schemaVersion(db, 'demo'), 2);
        assert.equal(schemaVersion(db, 'other'), 0);
        const tables = db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'demo_%' ORDER BY name")
          .all<{ name: string }>();
        assert.deepEqual(
          tables.map((t) => t.name),
          ['demo_a', 'demo_b'],
        );
      }),
    );
  });
}

describe('openSqlite', () => {
  it('rejects invalid options', () => {
    assert.throws(() => openSqlite(''), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { synchronous: 'SOMETIMES' as 'FULL' }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { busyTimeoutMs: -1 }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { cacheSizeKiB: 0 }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { cacheSizeKiB: 1.5 }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { driver: 'sqlite4' as 'auto' }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { checkpoint: 'never' as 'inline' }), InvalidOptionsError);
    assert.throws(() => openSqlite(freshPath(), { checkpoint: { intervalMs: 0 } }), /checkpoint\.intervalMs/);
    assert.throws(
      () => openSqlite(freshPath(), { checkpoint: { restartPages: 1.5 } }),
      /checkpoint\.restartPages/,
    );
    assert.throws(
      () => openSqlite(freshPath(), { checkpoint: { maxStallMs: -1 } }),
      /checkpoint\.maxStallMs/,
    );
    assert.throws(
      () => openSqlite(freshPath(), { groupCommit: 'yes' as unknown as boolean }),
      InvalidOptionsError,
    );
    assert.throws(
      () => openSqlite(freshPath(), { threadLock: new ArrayBuffer(4) as unknown as SharedArrayBuffer }),
      InvalidOptionsError,
    );
  });

  it('says why a driver it cannot load is unavailable', () => {
    const missing = (['node:sqlite', 'better-sqlite3'] as const).find(
      (driver) => sqliteDriverAvailable(driver) !== true,
    );
    if (missing === undefined) return;
    assert.throws(() => openSqlite(freshPath(), { driver: missing }), SqliteDriverError);
  });

  it('prefers node:sqlite when this Node has it', () => {
    const db = openSqlite(freshPath());
    try {
      assert.equal(
        db.driver,
        sqliteDriverAvailable('node:sqlite') === true ? 'node:sqlite' : 'better-sqlite3',
      );
    } finally {
      db.close();
    }
  });

  it('rejects a handle it does not know', () => {
    assert.throws(() => wrapSqlite({}), SqliteDriverError);
  });
});
