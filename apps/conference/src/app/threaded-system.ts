/**
 * The embedded default on two threads. Node runs a thread's JavaScript on one core, and one thread was the limit
 * of the whole system: the web parts (HTTP, the in-process web commands, queries) stay on the main thread, the
 * background parts (background-thread.ts) run in a worker thread, both on the one SQLite file. The thread passes on
 * each view change once committed, so the web's waits wake at once and its document cache stays right; SQLite
 * watchers hear each other's commits across threads (WatchHub). A thread that dies is started again after a second;
 * readiness says unavailable until it is back.
 */
import { extname } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startWorkerThread } from '@stratus/core';
import { sqliteThreadLock } from '@stratus/sql';
import type { ConferenceConfig } from './config.js';
import type { ViewChange } from './infrastructure.js';
import {
  type BackgroundStats,
  type ConferenceSystem,
  type SystemLog,
  startConferenceSystem,
} from './system.js';

/** What the background thread tells the main thread. */
export type FromBackground =
  | { readonly type: 'ready'; readonly ready: boolean }
  | { readonly type: 'changed'; readonly keys: ViewChange }
  | { readonly type: 'stats'; readonly id: number; readonly stats: BackgroundStats }
  /** What the thread reports (a parked event), for the main thread's log. */
  | {
      readonly type: 'log';
      readonly level: 'error' | 'info';
      readonly details: object;
      readonly message: string;
    };

/** What the main thread asks of the background thread. */
export type ToBackground = { readonly type: 'stats'; readonly id: number } | { readonly type: 'stop' };

/** What the background thread starts from (its workerData). */
export interface BackgroundData {
  readonly config: ConferenceConfig;
  readonly threadLock: SharedArrayBuffer;
}

/** Where the system reports a background thread that died, and parked events (a pino logger will do). */
export type ThreadLog = SystemLog;

export interface SystemOptions {
  readonly log?: ThreadLog;
}

const RESTART_DELAY_MS = 1000;
const STATS_TIMEOUT_MS = 5000;
const STOP_TIMEOUT_MS = 30_000;
const NO_STATS: BackgroundStats = { viewLag: [], processOutcomes: [], failingHandlers: [] };

/**
 * Starts the system as configured: the embedded default with `backgroundThread` (the default) on two threads,
 * anything else in this thread (startConferenceSystem).
 */
export async function startSystem(
  config: ConferenceConfig,
  options: SystemOptions = {},
): Promise<ConferenceSystem> {
  if (!config.backgroundThread || config.role !== 'all' || config.databaseUrl !== undefined)
    return startConferenceSystem(config, { log: options.log });
  const threadLock = sqliteThreadLock();
  const background = new BackgroundThread(
    // .ts from the sources, .js once compiled.
    new URL(`./background-thread${extname(import.meta.url)}`, import.meta.url),
    { config, threadLock } satisfies BackgroundData,
    options.log,
  );
  // The web part first: it creates the schema, so the thread does not race it there.
  const web = await startConferenceSystem(
    { ...config, role: 'web' },
    {
      viewChanges: (listener) => background.onChange(listener),
      backgroundStats: () => background.stats(),
      sqliteThreadLock: threadLock,
    },
  );
  try {
    await background.start();
  } catch (error) {
    await web.stop();
    throw error;
  }
  return {
    ...web,
    ready: () => web.ready() && background.ready,
    async stop() {
      await web.stop();
      await background.stop();
    },
  };
}

/**
 * A worker thread running background parts: started again a second after it dies, stopped gracefully. The module
 * speaks FromBackground and ToBackground; its first 'ready' message says it started.
 */
export class BackgroundThread {
  readonly #module: URL;
  readonly #workerData: unknown;
  readonly #log: ThreadLog | undefined;
  readonly #changeListeners: ((keys: ViewChange) => void)[] = [];
  readonly #pendingStats = new Map<number, (stats: BackgroundStats) => void>();
  #nextStatsId = 0;
  #worker: Worker | undefined;
  #restart: NodeJS.Timeout | undefined;
  #stopping = false;
  ready = false;

  constructor(module: URL, workerData: unknown, log: ThreadLog | undefined) {
    this.#module = module;
    this.#workerData = workerData;
    this.#log = log;
  }

  /** Hears each view change the thread commits; 'all' when it starts again (its last changes may be unreported). */
  onChange(listener: (keys: ViewChange) => void): void {
    this.#changeListeners.push(listener);
  }

  /** Starts the thread; resolves once its parts run, rejects if it fails before that. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      let started = false;
      const worker = startWorkerThread(this.#module, { workerData: this.#workerData });
      this.#worker = worker;
      worker.on('message', (message: FromBackground) => {
        if (message.type === 'changed') {
          for (const listener of this.#changeListeners) listener(message.keys);
        } else if (message.type === 'stats') {
          this.#pendingStats.get(message.id)?.(message.stats);
        } else if (message.type === 'log') {
          this.#log?.[message.level](message.details, message.message);
        } else {
          this.ready = message.ready;
          if (!started) {
            started = true;
            resolve();
          }
        }
      });
      let failure: unknown;
      worker.on('error', (error: Error) => {
        failure = error;
      });
      worker.on('exit', (code: number) => {
        this.ready = false;
        if (this.#worker === worker) this.#worker = undefined;
        for (const answer of this.#pendingStats.values()) answer(NO_STATS);
        this.#pendingStats.clear();
        if (!started) {
          reject(failure ?? new Error(`the background thread exited with code ${code} before it was ready`));
          return;
        }
        if (this.#stopping) return;
        this.#log?.error(
          { err: failure, code, restartInMs: RESTART_DELAY_MS },
          'the background thread died; starting it again',
        );
        this.#restart = setTimeout(() => this.#startAgain(), RESTART_DELAY_MS);
      });
    });
  }

  #startAgain(): void {
    this.#restart = undefined;
    if (this.#stopping) return;
    this.start().then(
      () => {
        // The dead thread may have committed changes it never reported.
        for (const listener of this.#changeListeners) listener('all');
        this.#log?.info({}, 'the background thread is running again');
      },
      (error: unknown) => {
        this.#log?.error({ err: error }, 'the background thread failed to start; trying again');
        if (!this.#stopping) this.#restart = setTimeout(() => this.#startAgain(), RESTART_DELAY_MS);
      },
    );
  }

  /** The thread's stats; none while it is down or when it does not answer in time. */
  stats(): Promise<BackgroundStats> {
    const worker = this.#worker;
    if (worker === undefined) return Promise.resolve(NO_STATS);
    const id = this.#nextStatsId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => answer(NO_STATS), STATS_TIMEOUT_MS);
      const answer = (stats: BackgroundStats) => {
        clearTimeout(timer);
        this.#pendingStats.delete(id);
        resolve(stats);
      };
      this.#pendingStats.set(id, answer);
      worker.postMessage({ type: 'stats', id } satisfies ToBackground);
    });
  }

  /** Stops the thread's parts gracefully, terminating the thread if they take longer than 30 s. */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#restart);
    const worker = this.#worker;
    if (worker === undefined) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ type: 'stop' } satisfies ToBackground);
    const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }
}
