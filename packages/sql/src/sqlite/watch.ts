/**
 * Wake-ups for `MessageBackend.watch` on SQLite, which has no notification channel between processes:
 * - in this process, a commit wakes the watchers of every backend open on the same file at once, in this thread,
 *   and other threads hear it over a BroadcastChannel: the first wake-up at once (at the end of the turn), then at
 *   most one post per THREAD_POST_MS with every queue woken meanwhile;
 * - from other processes, each backend with watchers polls `PRAGMA data_version` (it changes when another
 *   connection commits; reading it touches no page, so a poll costs about a microsecond). Only on a change
 *   does it read the signal of each watched queue (a counter bumped by abandons, resends and session hand-overs, and
 *   its highest sequence, moved by sends) and wakes the queues whose signal moved.
 * The poll runs only while someone watches, and its timer never keeps the process alive.
 */
import { realpathSync } from 'node:fs';
import { BroadcastChannel } from 'node:worker_threads';
import { randomId } from '@stratus/core';
import { isMemoryPath, type SqliteDatabase } from './database.js';

type Listener = () => void;

/** How fileKey marks an in-memory database. */
const MEMORY_KEY = 'memory:';

/** Hubs with watchers, by database file, so a commit reaches every backend on that file in this thread. */
const hubsByFile = new Map<string, Set<WatchHub>>();

interface ThreadWakeUps {
  readonly file: string;
  readonly queues: readonly string[];
}

/** The other threads of this process; each has its own `hubsByFile`. Opened on first use, never keeps it alive. */
let threads: BroadcastChannel | undefined;
/** Queues woken since the last post to the other threads, by file. */
let outgoing: Map<string, Set<string>> | undefined;
/**
 * The shortest time between two posts to the other threads. A post costs this thread about 3 µs (a twentieth of a
 * single SQLite send); a back-to-back sender would otherwise post on every send for watchers that are busy anyway.
 */
const THREAD_POST_MS = 1;
/** When the next post may go (performance.now()). */
let nextPostAt = 0;

function threadChannel(): BroadcastChannel {
  if (threads === undefined) {
    threads = new BroadcastChannel('stratus:sqlite-watch');
    threads.unref();
    threads.onmessage = (event) => {
      const { file, queues } = (event as { data: ThreadWakeUps }).data;
      const hubs = hubsByFile.get(file);
      if (hubs !== undefined) for (const queue of queues) for (const hub of hubs) hub.wake(queue);
    };
  }
  return threads;
}

function postToOtherThreads(): void {
  const woken = outgoing;
  outgoing = undefined;
  if (woken === undefined) return;
  nextPostAt = performance.now() + THREAD_POST_MS;
  const channel = threadChannel();
  for (const [file, queues] of woken)
    channel.postMessage({ file, queues: [...queues] } satisfies ThreadWakeUps);
}

function tellOtherThreads(file: string, queue: string): void {
  if (outgoing === undefined) {
    outgoing = new Map();
    const wait = nextPostAt - performance.now();
    if (wait <= 0) queueMicrotask(postToOtherThreads);
    else setTimeout(postToOtherThreads, wait);
  }
  let queues = outgoing.get(file);
  if (queues === undefined) {
    queues = new Set();
    outgoing.set(file, queues);
  }
  queues.add(queue);
}

export class WatchHub {
  readonly #file: string;
  readonly #database: SqliteDatabase;
  readonly #signalOf: (queue: string) => string | undefined;
  readonly #intervalMs: number;
  readonly #listeners = new Map<string, Set<Listener>>();
  /** The last seen signal of each watched queue (undefined while the queue does not exist). */
  readonly #signals = new Map<string, string | undefined>();
  #timer: NodeJS.Timeout | undefined;
  #dataVersion = -1;

  /**
   * @param file identifies the database file (its real path), so backends on one file in this process find
   *   each other; an in-memory database gets a key of its own.
   * @param signalOf reads what changes when messages of a queue may have become available.
   */
  constructor(
    file: string,
    database: SqliteDatabase,
    signalOf: (queue: string) => string | undefined,
    intervalMs: number,
  ) {
    this.#file = file;
    this.#database = database;
    this.#signalOf = signalOf;
    this.#intervalMs = intervalMs;
  }

  watch(queue: string, listener: Listener): () => void {
    let listeners = this.#listeners.get(queue);
    if (listeners === undefined) {
      listeners = new Set();
      this.#listeners.set(queue, listeners);
      this.#signals.set(queue, this.#signalOf(queue));
      if (this.#listeners.size === 1) this.#start();
    }
    // Wrapped so the same function can watch twice and unwatch once.
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      if (!listeners.delete(entry) || listeners.size > 0 || this.#listeners.get(queue) !== listeners) return;
      this.#listeners.delete(queue);
      this.#signals.delete(queue);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  /** After a commit that may have made messages of `queue` available: wakes its watchers on this file. */
  notify(queue: string): void {
    const hubs = hubsByFile.get(this.#file);
    if (hubs !== undefined) for (const hub of hubs) hub.wake(queue);
    // No other thread can open an in-memory database.
    if (!this.#file.startsWith(MEMORY_KEY)) tellOtherThreads(this.#file, queue);
  }

  close(): void {
    this.#listeners.clear();
    this.#signals.clear();
    this.#stop();
  }

  /** Wakes this hub's watchers of `queue` (for notify, here or in another thread). */
  wake(queue: string): void {
    const listeners = this.#listeners.get(queue);
    if (listeners === undefined) return;
    queueMicrotask(() => {
      for (const listener of listeners) listener();
    });
  }

  #start(): void {
    let hubs = hubsByFile.get(this.#file);
    if (hubs === undefined) {
      hubs = new Set();
      hubsByFile.set(this.#file, hubs);
    }
    hubs.add(this);
    threadChannel();
    this.#dataVersion = this.#readDataVersion();
    this.#timer = setInterval(() => this.#poll(), this.#intervalMs);
    this.#timer.unref();
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    const hubs = hubsByFile.get(this.#file);
    hubs?.delete(this);
    if (hubs?.size === 0) hubsByFile.delete(this.#file);
  }

  #readDataVersion(): number {
    return this.#database.prepare('PRAGMA data_version').get<{ data_version: number }>()?.data_version ?? -1;
  }

  #poll(): void {
    if (!this.#database.isOpen) {
      this.#stop();
      return;
    }
    try {
      const version = this.#readDataVersion();
      if (version === this.#dataVersion) return;
      this.#dataVersion = version;
      for (const [queue, seen] of this.#signals) {
        const signal = this.#signalOf(queue);
        if (signal === seen) continue;
        this.#signals.set(queue, signal);
        this.wake(queue);
      }
    } catch {
      // A read can meet SQLITE_BUSY while another process recovers the WAL; the next poll looks again.
    }
  }
}

/** What identifies a database file for WatchHub: its real path (an in-memory database gets a key of its own). */
export function fileKey(path: string): string {
  if (isMemoryPath(path)) return `${MEMORY_KEY}${randomId()}`;
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
