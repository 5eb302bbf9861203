/**
 * Moves WAL checkpoints off the event loop. By default SQLite checkpoints in whichever connection commits past
 * 1000 WAL pages: that commit copies the pages into the database file and fsyncs it, twice, which on an ordinary
 * disk costs milliseconds every few hundred single-message commits. Here a worker thread with its own connection
 * does it instead: a PASSIVE checkpoint (never blocks anyone) every `intervalMs`, and a RESTART checkpoint when the
 * WAL has grown past `restartPages` (writers that never pause would otherwise keep the WAL from ever starting over;
 * it holds writers off for about one fsync, and for at most `maxStallMs` if a reader lingers). The committing
 * connection keeps a far higher automatic threshold as a backstop should the worker die.
 *
 * A RESTART holds the write lock while it copies what the WAL gained since the last checkpoint, syncs, and waits for
 * readers to leave the WAL. Two things keep that short (measured, 1 KiB sends one at a time: 5 to 10 stalls a
 * second of 5 to 130 ms, a fifth of the time spent, before):
 * - PASSIVE checkpoints run back to back first, until one takes under a millisecond, so little is left to copy;
 * - `restarting` is set while the RESTART runs: writers of this process wait on it rather than retry BEGIN, since
 *   each retry opens a read on the WAL, and a reader seen by the RESTART sends it into SQLite's busy handler, which
 *   sleeps 1, 2, 5, 10... ms.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDriverName } from './database.js';

export interface CheckpointerOptions {
  /** How often a PASSIVE checkpoint runs, in ms. Default 100. */
  intervalMs?: number;
  /** WAL pages past which a RESTART checkpoint starts the WAL over. Default 8192 (32 MiB of 4 KiB pages). */
  restartPages?: number;
  /** How long a RESTART waits for the write lock and for readers to leave the WAL, in ms. Default 100. */
  maxStallMs?: number;
}

const STOP_WAIT_MS = 1000;

/** PASSIVE checkpoints run back to back before a RESTART, at most. */
const DRAIN_ROUNDS = 8;

/** The committing connection still checkpoints by itself past this many times `restartPages`. */
const BACKSTOP_FACTOR = 4;

// Plain CommonJS run with `eval`, so it needs no file of its own next to the compiled or the source module.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { path, driver, module, intervalMs, restartPages, maxStallMs, stopped, restarting } = workerData;
const db = driver === 'node:sqlite'
  ? new (require('node:sqlite').DatabaseSync)(path)
  : new (require(module))(path);
db.exec('PRAGMA busy_timeout = ' + maxStallMs);
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
const timer = setInterval(() => {
  try {
    if (passive.get().log < restartPages) return;
    for (let round = 0; round < ${DRAIN_ROUNDS}; round++) {
      const started = performance.now();
      passive.get();
      if (performance.now() - started < 1) break;
    }
    Atomics.store(restarting, 0, 1);
    try {
      restart.get();
    } finally {
      Atomics.store(restarting, 0, 0);
      Atomics.notify(restarting, 0);
    }
  } catch {
    // Busy or interrupted: the next round tries again.
  }
}, intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try {
    db.close();
  } finally {
    Atomics.store(stopped, 0, 1);
    Atomics.notify(stopped, 0);
    parentPort.close();
  }
});
`;

const require = createRequire(import.meta.url);

export class BackgroundCheckpointer {
  /** The automatic checkpoint threshold to leave on the committing connection, as a backstop. */
  readonly backstopPages: number;
  /** 1 while the worker runs a RESTART checkpoint (it holds the write lock): writers of this process wait on it. */
  readonly restarting = new Int32Array(new SharedArrayBuffer(4));
  readonly #worker: Worker;
  /** Set to 1 by the worker once its connection is closed. */
  readonly #closed = new Int32Array(new SharedArrayBuffer(4));
  #stopped = false;

  /**
   * Starts checkpointing `path` (a WAL database) from a worker thread. `onFailure` runs if the worker cannot
   * start or dies, so the caller can hand checkpoints back to SQLite.
   */
  constructor(
    path: string,
    driver: SqliteDriverName,
    onFailure: () => void,
    options: CheckpointerOptions = {},
  ) {
    const { intervalMs = 100, restartPages = 8192, maxStallMs = 100 } = options;
    this.backstopPages = restartPages * BACKSTOP_FACTOR;
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        path,
        driver,
        module: driver === 'better-sqlite3' ? require.resolve('better-sqlite3') : undefined,
        intervalMs,
        restartPages,
        maxStallMs,
        stopped: this.#closed,
        restarting: this.restarting,
      },
    });
    this.#worker.unref();
    this.#worker.on('error', () => {
      // A worker that died in a RESTART must not leave writers waiting on it.
      Atomics.store(this.restarting, 0, 0);
      Atomics.notify(this.restarting, 0);
      if (!this.#stopped) onFailure();
    });
  }

  /**
   * Asks the worker to close its connection and end, and waits (up to a second, blocking) until its connection is
   * closed, so that nothing of ours touches the file once the database is closed.
   */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#worker.postMessage('stop');
    Atomics.wait(this.#closed, 0, 0, STOP_WAIT_MS);
  }
}
