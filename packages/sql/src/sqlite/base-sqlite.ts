import { isBusy } from './busy.js';
import { BackgroundCheckpointer, type CheckpointerOptions } from './checkpointer.js';
import type {
  SqliteDatabase,
  SqliteDriverName,
  SqliteStatement,
  SqliteValue,
  TransactionAsyncOptions,
} from './database.js';

/** Longest wait for another thread's transaction to end before asking SQLite anyway (it may have died holding it). */
const THREAD_WAIT_MS = 50;

/** Atomics.waitAsync (Node 16+; not in the ES2023 library types). */
interface AtomicsWaitAsync {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeoutMs: number,
  ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
}

/** #tryBegin's answer when another thread of this process writes. */
const THREAD_BUSY = Symbol('another thread writes');

/** How long a writer that found the write lock taken retries at every turn of the event loop (#lockMayBeFree). */
const EAGER_RETRY_MS = 2;

/** Transactions, savepoints, after-commit callbacks and the statement cache, common to both drivers. */ export abstract class BaseSqlite
  implements SqliteDatabase
{
  abstract readonly driver: SqliteDriverName;
  abstract readonly handle: unknown;
  abstract readonly isOpen: boolean;
  readonly path: string;
  busyTimeoutMs = 0;
  groupCommit = false;
  /**
   * Whether #tryBegin may leave SQLite's busy timeout at 0 after its transaction (openSqlite's handles; a wrapped
   * handle stays as its owner configured it, since they may run statements on it directly).
   */
  lazyBusyTimeout = false;
  readonly #statements = new Map<string, SqliteStatement>();
  /**
   * SQLite's busy timeout is 0 on this connection, as #tryBegin left it. Setting it costs as much as an insert, and
   * two flips per transaction cost a send about 2 of its 35 µs; so it stays 0 while only asynchronous transactions
   * run (whose statements hold the write lock, or read a WAL snapshot, and never wait), and a statement that may
   * wait for a lock (anything run outside a transaction, and the synchronous `transaction`'s BEGIN) sets it back
   * first.
   */
  #busyTimeoutLowered = false;
  /** True while #tryBegin runs its BEGIN, which must not wait (so must not set the busy timeout back). */
  #tryingBegin = false;
  /** Transactions opened through `transaction` on this connection (1 = outermost, more = savepoints). */
  #depth = 0;
  #afterCommit: (() => void)[] = [];
  #checkpointer: BackgroundCheckpointer | undefined;
  /** `transactionAsync` calls waiting for this turn's group commit. */
  #queued: QueuedTransaction[] = [];
  #flushScheduled = false;
  /** When the group's flush first found the write lock taken, while it still does. */
  #busySince: number | undefined;
  /** OpenSqliteOptions.threadLock: 1 while a thread of this process has a write transaction open, else 0. */
  #threadLock: Int32Array | undefined;
  /** Whether this connection set the thread lock (it clears it when its transaction ends). */
  #holdsThreadLock = false;
  /** Whether the last wait for another thread's transaction timed out: its lock may be stale, ask SQLite. */
  #threadWaitTimedOut = false;

  constructor(path: string) {
    this.path = path;
  }

  /**
   * Waits until the write lock may be free. For its first 2 ms of waiting a writer tries again at the next turn of
   * the event loop: another thread of this process sharing the file (a web thread and a background thread) holds
   * the lock for a part of one of its turns, and a writer polling by timer keeps losing the lock to that thread's
   * next turn (measured: the conference system confirmed 145 orders/s at 200/s polling, 170/s retrying eagerly).
   * After that, every millisecond, as for other processes.
   */
  #lockMayBeFree(waitedMs: number): Promise<void> {
    const held = this.#threadWaitTimedOut ? undefined : this.#heldByThread();
    // Another thread of this process writes (it may have begun just before this one asked SQLite) or checkpoints:
    // be woken when it is done; the timeout covers a thread that died holding the lock.
    if (held !== undefined) {
      const wait = (Atomics as unknown as AtomicsWaitAsync).waitAsync(held, 0, 1, THREAD_WAIT_MS);
      if (wait.async) {
        // A pending waitAsync does not keep the event loop alive; this timer does, until the wait ends.
        const alive = setTimeout(() => {}, THREAD_WAIT_MS + 1);
        return wait.value.then((outcome) => {
          clearTimeout(alive);
          this.#threadWaitTimedOut = outcome === 'timed-out';
        });
      }
    }
    return new Promise((resolve) =>
      waitedMs < EAGER_RETRY_MS ? setImmediate(resolve) : setTimeout(resolve, 1),
    );
  }

  /** The lock word of another thread of this process that holds the write lock now (a writer or a checkpoint). */
  #heldByThread(): Int32Array | undefined {
    const lock = this.#threadLock;
    if (lock !== undefined && Atomics.load(lock, 0) !== 0) return lock;
    const restarting = this.#checkpointer?.restarting;
    if (restarting !== undefined && Atomics.load(restarting, 0) !== 0) return restarting;
    return undefined;
  }

  /** @internal Set by openSqlite (OpenSqliteOptions.threadLock). */
  shareThreadLock(buffer: SharedArrayBuffer): void {
    this.#threadLock = new Int32Array(buffer, 0, 1);
  }

  protected abstract compile(sql: string): SqliteStatement;
  protected abstract get driverInTransaction(): boolean | undefined;
  protected abstract closeHandle(): void;
  protected abstract execHandle(sql: string): void;

  exec(sql: string): void {
    this.#restoreBusyTimeout();
    this.execHandle(sql);
  }

  close(): void {
    // Transactions already asked for still run (or fail) rather than hang.
    if (this.#queued.length > 0 && this.isOpen) this.#flush();
    this.#checkpointer?.stop();
    this.#checkpointer = undefined;
    if (this.isOpen) this.closeHandle();
  }

  /** Hands WAL checkpoints to a worker thread; SQLite's own take over again if it fails. */
  checkpointInBackground(options: CheckpointerOptions): void {
    const checkpointer = new BackgroundCheckpointer(
      this.path,
      this.driver,
      () => {
        if (this.#checkpointer === checkpointer && this.isOpen) this.exec('PRAGMA wal_autocheckpoint = 1000');
      },
      options,
    );
    this.#checkpointer = checkpointer;
    this.exec(`PRAGMA wal_autocheckpoint = ${checkpointer.backstopPages}`);
  }

  prepare(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      // Some pragmas read the busy timeout when compiled (PRAGMA busy_timeout itself).
      this.#restoreBusyTimeout();
      const compiled = this.compile(sql);
      statement = {
        run: (...params) => {
          this.#restoreBusyTimeout();
          return compiled.run(...params);
        },
        get: <T>(...params: SqliteValue[]) => {
          this.#restoreBusyTimeout();
          return compiled.get<T>(...params);
        },
        all: <T>(...params: SqliteValue[]) => {
          this.#restoreBusyTimeout();
          return compiled.all<T>(...params);
        },
      };
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Sets SQLite's busy timeout back if #tryBegin left it at 0 and the statement about to run may have to wait. */
  #restoreBusyTimeout(): void {
    if (!this.#busyTimeoutLowered || this.#depth > 0 || this.#tryingBegin) return;
    this.#busyTimeoutLowered = false;
    this.prepare(`PRAGMA busy_timeout = ${this.busyTimeoutMs}`).run();
  }

  get inTransaction(): boolean {
    return this.driverInTransaction ?? this.#depth > 0;
  }

  transaction<T>(fn: () => T): T {
    if (this.#depth === 0 && !this.inTransaction) return this.#outermost(fn);
    const savepoint = `stratus_${this.#depth}`;
    const callbacksBefore = this.#afterCommit.length;
    this.prepare(`SAVEPOINT ${savepoint}`).run();
    this.#depth++;
    try {
      const result = synchronously(fn);
      this.prepare(`RELEASE ${savepoint}`).run();
      return result;
    } catch (error) {
      this.prepare(`ROLLBACK TO ${savepoint}`).run();
      this.prepare(`RELEASE ${savepoint}`).run();
      this.#afterCommit.length = callbacksBefore;
      throw error;
    } finally {
      this.#depth--;
      // Joined a transaction begun outside this interface: its commit is out of sight (see afterCommit).
      if (this.#depth === 0) this.#runAfterCommit();
    }
  }

  async transactionAsync<T>(fn: () => T, options?: TransactionAsyncOptions): Promise<T> {
    if (!this.groupCommit || options?.immediate === true) return this.#transactionAlone(fn);
    if (this.#depth > 0 || this.inTransaction) return this.transaction(fn);
    return new Promise<T>((resolve, reject) => {
      this.#queued.push({
        fn,
        resolve: resolve as (value: unknown) => void,
        reject,
        deadline: performance.now() + this.busyTimeoutMs,
      });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        if (options?.eager === true) queueMicrotask(() => this.#flush());
        else setImmediate(() => this.#flush());
      }
    });
  }

  async #transactionAlone<T>(fn: () => T): Promise<T> {
    const started = performance.now();
    const deadline = started + this.busyTimeoutMs;
    for (;;) {
      // Checked on every attempt: a transaction may have been opened while this one waited.
      if (this.#depth > 0 || this.inTransaction) return this.transaction(fn);
      const busy = this.#tryBegin(deadline);
      if (busy === undefined) return this.#run(fn);
      const now = performance.now();
      // Past the deadline, the next attempt asks SQLite, whose error is the one to throw.
      if (now >= deadline && busy !== THREAD_BUSY) throw busy;
      await this.#lockMayBeFree(now - started);
    }
  }

  /** Runs the queued transactions, up to MAX_GROUP at a time, in one write transaction per group. */
  #flush(): void {
    this.#flushScheduled = false;
    while (this.#queued.length > 0) {
      if (!this.isOpen) {
        for (const entry of this.#queued.splice(0)) entry.reject(new TypeError('The database is closed'));
        return;
      }
      // A transaction begun outside this interface (and left open across an await): each joins it, as before.
      if (this.#depth > 0 || this.inTransaction) {
        for (const entry of this.#queued.splice(0)) settle(entry, () => this.transaction(entry.fn));
        return;
      }
      // The queue is in arrival order: its first entry has the earliest deadline.
      const busy = this.#tryBegin((this.#queued[0] as QueuedTransaction).deadline);
      if (busy !== undefined) {
        const now = performance.now();
        this.#busySince ??= now;
        // Only SQLite's own busy error expires entries (past a deadline, the next attempt asks SQLite).
        if (busy !== THREAD_BUSY) {
          const expired = this.#queued.filter((entry) => entry.deadline <= now);
          this.#queued = this.#queued.filter((entry) => entry.deadline > now);
          for (const entry of expired) entry.reject(busy);
        }
        if (this.#queued.length > 0 && !this.#flushScheduled) {
          this.#flushScheduled = true;
          void this.#lockMayBeFree(now - this.#busySince).then(() => this.#flush());
        }
        return;
      }
      this.#busySince = undefined;
      this.#runGroup(this.#queued.splice(0, MAX_GROUP));
    }
  }

  /** The group's transactions in one, once BEGIN IMMEDIATE succeeded; a lone one without a savepoint. */
  #runGroup(group: QueuedTransaction[]): void {
    if (group.length === 1) {
      const [entry] = group as [QueuedTransaction];
      settle(entry, () => this.#run(entry.fn));
      return;
    }
    const outcomes: ({ value: unknown } | { error: unknown })[] = [];
    this.#depth++;
    let failure: { error: unknown } | undefined;
    for (const entry of group) {
      try {
        outcomes.push({ value: this.transaction(entry.fn) });
      } catch (error) {
        outcomes.push({ error });
        // An error that ended the whole transaction (SQLITE_FULL, an I/O error) takes the group with it.
        if (!this.inTransaction) {
          failure = { error };
          break;
        }
      }
    }
    try {
      if (failure === undefined) {
        try {
          this.prepare('COMMIT').run();
        } catch (error) {
          failure = { error };
          if (this.inTransaction) this.prepare('ROLLBACK').run();
        }
      }
    } finally {
      this.#depth--;
      this.#releaseThreadLock();
    }
    if (failure !== undefined) {
      this.#afterCommit = [];
      for (const entry of group) entry.reject(failure.error);
      return;
    }
    group.forEach((entry, i) => {
      const outcome = outcomes[i] as { value: unknown } | { error: unknown };
      if ('error' in outcome) entry.reject(outcome.error);
      else entry.resolve(outcome.value);
    });
    this.#runAfterCommit();
  }

  /**
   * BEGIN IMMEDIATE without SQLite's busy wait; the SQLITE_BUSY error when another connection writes. With a thread
   * lock, another thread of this process writing is known without asking SQLite: THREAD_BUSY, unless the last wait
   * for it timed out (the lock may be stale) or `deadline` passed (the caller wants SQLite's own answer).
   */
  #tryBegin(deadline = Number.POSITIVE_INFINITY): unknown {
    const stale = this.#threadWaitTimedOut;
    this.#threadWaitTimedOut = false;
    if (!stale && this.#heldByThread() !== undefined && performance.now() < deadline) return THREAD_BUSY;
    if (!this.#busyTimeoutLowered) {
      this.prepare('PRAGMA busy_timeout = 0').run();
      this.#busyTimeoutLowered = true;
    }
    this.#tryingBegin = true;
    try {
      this.prepare('BEGIN IMMEDIATE').run();
      this.#holdThreadLock();
      return undefined;
    } catch (error) {
      if (isBusy(error)) return error;
      throw error;
    } finally {
      this.#tryingBegin = false;
      if (!this.lazyBusyTimeout) this.#restoreBusyTimeout();
    }
  }

  #outermost<T>(fn: () => T): T {
    // Outside #tryBegin, this BEGIN sets the busy timeout back first: it waits with SQLite's own.
    this.prepare('BEGIN IMMEDIATE').run();
    this.#holdThreadLock();
    return this.#run(fn);
  }

  #holdThreadLock(): void {
    if (this.#threadLock === undefined) return;
    Atomics.store(this.#threadLock, 0, 1);
    this.#holdsThreadLock = true;
  }

  /** The write transaction ended (committed or rolled back): threads waiting to write may try now. */
  #releaseThreadLock(): void {
    if (!this.#holdsThreadLock) return;
    this.#holdsThreadLock = false;
    const lock = this.#threadLock as Int32Array;
    Atomics.store(lock, 0, 0);
    Atomics.notify(lock, 0);
  }

  /** The rest of an outermost transaction, once BEGIN IMMEDIATE succeeded. */
  #run<T>(fn: () => T): T {
    this.#depth++;
    let result: T;
    try {
      result = synchronously(fn);
      this.prepare('COMMIT').run();
    } catch (error) {
      this.#depth--;
      this.#afterCommit = [];
      // SQLite may already have rolled back on its own (e.g. SQLITE_FULL); ROLLBACK would then fail.
      try {
        if (this.inTransaction) this.prepare('ROLLBACK').run();
      } finally {
        this.#releaseThreadLock();
      }
      throw error;
    }
    this.#releaseThreadLock();
    this.#depth--;
    this.#runAfterCommit();
    return result;
  }

  afterCommit(callback: () => void): void {
    if (this.#depth > 0) this.#afterCommit.push(callback);
    else callback();
  }

  #runAfterCommit(): void {
    if (this.#afterCommit.length === 0) return;
    const callbacks = this.#afterCommit;
    this.#afterCommit = [];
    for (const callback of callbacks) callback();
  }
}

interface QueuedTransaction {
  readonly fn: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** When it stops waiting for another connection's write lock. */
  readonly deadline: number;
}

/** Transactions committed together at most: bounds how long one group holds the write lock. */
const MAX_GROUP = 256;

function settle(entry: QueuedTransaction, run: () => unknown): void {
  let value: unknown;
  try {
    value = run();
  } catch (error) {
    entry.reject(error);
    return;
  }
  entry.resolve(value);
}

function synchronously<T>(fn: () => T): T {
  const result = fn();
  if (typeof (result as { then?: unknown } | null)?.then === 'function') {
    throw new TypeError('SqliteDatabase.transaction: fn must be synchronous (it returned a promise)');
  }
  return result;
}
