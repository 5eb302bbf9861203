/**
 * Pieces of the crash tests: worker processes that get SIGKILLed on a seeded random schedule and replaced, the
 * SQLite inbox database the workers record their effects in, and the reading of the outcome.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { openSqlite, type SqliteDatabase } from '@stratus/sql';
import { type ChildExit, type ChildHandle, runChild, waitUntil } from '@stratus/testkit';
import type { QueueStats } from '../backend.js';
import { Messaging } from '../messaging.js';
import { openMessageBackend } from '../open-backend.js';
import { SqliteInbox } from '../outbox/inbox.js';
import type { QueueClient } from '../queue-client.js';

/** A small deterministic generator (mulberry32): a failing run can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Message ids `<prefix>0` ... `<prefix><count - 1>`. */
export function messageIds(count: number, prefix = 'm'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${i}`);
}

/** When one batch send started and when it was acknowledged (Date.now(), comparable across processes). */
export interface SendTiming {
  readonly startedAt: number;
  readonly endedAt: number;
}

/**
 * Sends one message per id (its body the id's number), `batchSize` at a time, `gapMs` apart (a producer that keeps
 * sending over a while, not one burst).
 */
export async function sendAll(
  queue: QueueClient<number>,
  ids: readonly string[],
  options: { batchSize?: number; gapMs?: number } = {},
): Promise<SendTiming[]> {
  const batchSize = options.batchSize ?? 500;
  const timings: SendTiming[] = [];
  for (let i = 0; i < ids.length; i += batchSize) {
    if (i > 0 && options.gapMs) await delay(options.gapMs);
    const startedAt = Date.now();
    await queue.sendBatch(ids.slice(i, i + batchSize).map((id, j) => ({ id, body: i + j })));
    timings.push({ startedAt, endedAt: Date.now() });
  }
  return timings;
}

/**
 * The database the workers share: the inbox's table, `effects` (one row per effect; deliberately no unique key,
 * so an effect that happened twice shows as two rows) and `duplicates` (deliveries the inbox recognised).
 */
export class InboxDatabase {
  readonly path: string;
  readonly #database: SqliteDatabase;

  constructor(path: string) {
    this.path = path;
    this.#database = openSqlite(path);
    new SqliteInbox({ database: this.#database });
    this.#database.exec(`
      CREATE TABLE IF NOT EXISTS effects (
        id TEXT NOT NULL, delivery_count INTEGER NOT NULL, pid INTEGER NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS duplicates (id TEXT NOT NULL, delivery_count INTEGER NOT NULL);`);
  }

  effectCount(): number {
    return this.#database.prepare('SELECT count(*) AS n FROM effects').get<{ n: number }>()?.n ?? 0;
  }

  /** When worker `pid` last recorded an effect (Date.now() of its clock), if ever. */
  lastEffectOf(pid: number): number | undefined {
    return (
      this.#database
        .prepare('SELECT max(at) AS at FROM effects WHERE pid = ?')
        .get<{ at: number | null }>(pid)?.at ?? undefined
    );
  }

  /** What happened to the messages `ids`, for the final assertions. */
  outcome(ids: readonly string[]): CrashOutcome {
    const db = this.#database;
    const counts = new Map(
      db
        .prepare('SELECT id, count(*) AS n FROM effects GROUP BY id')
        .all<{ id: string; n: number }>()
        .map((r) => [r.id, r.n]),
    );
    const one = <T>(sql: string) => db.prepare(sql).get<T>() as T;
    const sent = new Set(ids);
    return {
      effects: one<{ n: number }>('SELECT count(*) AS n FROM effects').n,
      missing: ids.filter((id) => !counts.has(id)),
      doubled: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
      unexpected: [...counts.keys()].filter((id) => !sent.has(id)),
      // Each message was delivered at least as often as the highest delivery count seen for it.
      deliveries: one<{ n: number }>(`
        SELECT coalesce(sum(most), 0) AS n FROM (
          SELECT max(delivery_count) AS most FROM (
            SELECT id, delivery_count FROM effects UNION ALL SELECT id, delivery_count FROM duplicates)
          GROUP BY id)`).n,
      duplicates: one<{ n: number }>('SELECT count(*) AS n FROM duplicates').n,
      workers: one<{ n: number }>('SELECT count(DISTINCT pid) AS n FROM effects').n,
    };
  }

  close(): void {
    this.#database.close();
  }
}

export interface CrashOutcome {
  /** Effect rows in all. */
  readonly effects: number;
  /** Ids without an effect. */
  readonly missing: string[];
  /** Ids whose effect happened more than once. */
  readonly doubled: string[];
  /** Effects of ids that were never sent. */
  readonly unexpected: string[];
  /** A lower bound of the deliveries: per message, the highest delivery count any handler saw. */
  readonly deliveries: number;
  /** Deliveries the inbox recognised as already processed. */
  readonly duplicates: number;
  /** Distinct worker processes that recorded effects. */
  readonly workers: number;
}

interface Worker {
  readonly child: ChildHandle;
  /** Never picked for a kill. */
  readonly spared: boolean;
  /** Resolves true once the worker consumes, false if it ended before. */
  readonly ready: Promise<boolean>;
}

/** Worker processes running one fixture, replaced when killed. */
export class WorkerPool {
  readonly #fixture: URL;
  readonly #env: Record<string, string>;
  readonly #workers = new Set<Worker>();
  #closed = false;
  kills = 0;
  started = 0;

  constructor(fixture: URL, env: Record<string, string>) {
    this.#fixture = fixture;
    this.#env = env;
  }

  /** Starts `count` workers; `spared` ones are never killed (they must ride out whatever else happens). */
  start(count = 1, options: { spared?: boolean } = {}): ChildHandle[] {
    const children: ChildHandle[] = [];
    if (this.#closed) return children;
    for (let i = 0; i < count; i++) {
      const child = runChild(this.#fixture, { env: this.#env, lifetimeMs: 120_000 });
      const ready = child
        .nextMessage((m) => (m as { type?: string }).type === 'ready', 30_000)
        .then(
          () => true,
          () => false,
        );
      this.#workers.add({ child, ready, spared: options.spared ?? false });
      this.started++;
      children.push(child);
    }
    return children;
  }

  /** SIGKILLs a worker picked by `random`, waits until it is gone, and starts a replacement. */
  async killOne(random: () => number): Promise<void> {
    const workers = [...this.#workers].filter((worker) => !worker.spared);
    const victim = workers[Math.floor(random() * workers.length)];
    if (victim === undefined) return;
    this.#workers.delete(victim);
    victim.child.kill('SIGKILL');
    await victim.child.exited;
    this.kills++;
    this.start();
  }

  /**
   * Every `minGapMs`–`maxGapMs` (drawn from `random`), kills a worker and replaces it, until `maxKills` kills or
   * `done()`.
   */
  async killAtRandom(
    random: () => number,
    options: { maxKills: number; minGapMs: number; maxGapMs: number; done: () => boolean },
  ): Promise<void> {
    while (this.kills < options.maxKills && !options.done()) {
      await delay(options.minGapMs + random() * (options.maxGapMs - options.minGapMs));
      if (options.done()) return;
      await this.killOne(random);
    }
  }

  /** Shuts every worker down with SIGTERM (once it is up, so it handles the signal) and returns how they ended. */
  async stop(): Promise<{ exits: ChildExit[]; stderr: string[] }> {
    const workers = [...this.#workers];
    this.#workers.clear();
    const exits = await Promise.all(
      workers.map(async (worker) => {
        await worker.ready;
        return worker.child.stop(10_000);
      }),
    );
    return { exits, stderr: workers.map((worker) => worker.child.stderr) };
  }

  /** SIGKILLs every worker and starts no more (clean-up after a failure). */
  async killAll(): Promise<void> {
    this.#closed = true;
    const workers = [...this.#workers];
    this.#workers.clear();
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.child.exited));
  }
}

export interface CrashScenarioOptions {
  /** The parent's client: it creates the queue, sends, and reads the queue's stats. */
  readonly messaging: Messaging;
  /** What the workers open (openMessageBackend). */
  readonly backendUrl: string;
  /** A directory for the inbox database. */
  readonly dir: string;
  readonly seed: number;
  readonly messages?: number;
  readonly workers?: number;
  /** Handlers per worker. */
  readonly concurrency?: number;
  /** Simulated I/O of each handler, which paces the drain so that kills land mid-run. */
  readonly handlerMs?: number;
  readonly maxKills?: number;
  readonly lockMs?: number;
  /** Runs while the second half is sent and workers get killed (a server restart). */
  readonly disrupt?: () => Promise<void>;
  /** Workers among the first ones that are never killed (to show that they ride out `disrupt`); default 0. */
  readonly spared?: number;
  /** Real-time bound of the drain, from the start of the second half. */
  readonly drainTimeoutMs?: number;
}

export interface CrashReport {
  readonly outcome: CrashOutcome;
  readonly stats: QueueStats;
  readonly kills: number;
  /** Worker processes started in all. */
  readonly started: number;
  /** The batches of the second half. */
  readonly sends: SendTiming[];
  /** The workers that were never killed: when each last recorded an effect, how often its receive failed. */
  readonly spared: { lastEffectAt: number | undefined; receiveFailures: number }[];
  /** How the last workers ended on SIGTERM. */
  readonly exits: ChildExit[];
  readonly stderr: string[];
  readonly durationMs: number;
}

const WORKER = new URL('./fixtures/worker.ts', import.meta.url);
const QUEUE = 'crash';

/**
 * The crash test: sends half the messages, starts the workers, and once they are busy sends the other half while
 * killing a worker every 200–800 ms (replacing it) and running `disrupt`; waits (bounded) until every message took
 * effect and the queue is empty, then shuts the workers down and reads what happened.
 */
export async function runCrashScenario(options: CrashScenarioOptions): Promise<CrashReport> {
  const count = options.messages ?? 10_000;
  const started = performance.now();
  const { messaging } = options;
  await messaging.createQueue(QUEUE, {
    lockDurationMs: options.lockMs ?? 1500,
    // Kills must never dead-letter a message: only lock expiry brings it back.
    maxDeliveryCount: 1000,
    duplicateWindowMs: 10 * 60_000,
  });
  const queue = messaging.queue<number>(QUEUE);
  const ids = messageIds(count);
  const inbox = new InboxDatabase(join(options.dir, 'inbox.db'));
  const pool = new WorkerPool(WORKER, {
    BACKEND_URL: options.backendUrl,
    QUEUE,
    CONCURRENCY: String(options.concurrency ?? 16),
    HANDLER_MS: String(options.handlerMs ?? 25),
    INBOX_PATH: inbox.path,
  });
  const random = seededRandom(options.seed);
  let finished = false;
  try {
    await sendAll(queue, ids.slice(0, count / 2));
    const spared = options.spared ?? 0;
    const sparedChildren = pool.start(spared, { spared: true });
    pool.start((options.workers ?? 3) - spared);
    await waitUntil(
      paced(() => inbox.effectCount() >= count / 10),
      'the workers are busy',
      30_000,
    );

    let drained = false;
    const drain = waitUntil(
      paced(async () => {
        if (inbox.effectCount() < count) return false;
        drained = (await queue.stats().catch(() => undefined))?.length === 0;
        return drained;
      }),
      `all ${count} messages took effect and the queue is empty`,
      options.drainTimeoutMs ?? 40_000,
    );
    const [sends] = await Promise.all([
      // The second half goes out over about two seconds, across whatever `disrupt` does.
      sendAll(queue, ids.slice(count / 2), { batchSize: 250, gapMs: 100 }),
      options.disrupt?.(),
      pool.killAtRandom(random, {
        maxKills: options.maxKills ?? 15,
        minGapMs: 200,
        maxGapMs: 800,
        done: () => finished || drained || inbox.effectCount() >= count,
      }),
      drain,
    ]);
    const { exits, stderr } = await pool.stop();
    return {
      outcome: inbox.outcome(ids),
      stats: await queue.stats(),
      kills: pool.kills,
      started: pool.started,
      sends,
      spared: sparedChildren.map((child) => ({
        lastEffectAt: inbox.lastEffectOf(child.pid),
        receiveFailures:
          child.messages
            .map((m) => m as { type?: string; receiveFailures?: number })
            .find((m) => m.type === 'closed')?.receiveFailures ?? 0,
      })),
      exits,
      stderr,
      durationMs: Math.round(performance.now() - started),
    };
  } finally {
    finished = true;
    await pool.killAll();
    inbox.close();
  }
}

const MESSAGES = 10_000;

/**
 * Runs the scenario (10,000 messages) on a fresh temp dir, prints its figures under `label`, and checks what every
 * crash test requires.
 */
export async function crashAndCheck(
  label: string,
  backendUrl: string,
  seed: number,
  options: { disrupt?: () => Promise<void>; spared?: number; settingsCacheMs?: number } = {},
): Promise<CrashReport> {
  const dir = mkdtempSync(join(tmpdir(), 'stratus-crash-'));
  const messaging = new Messaging({
    backend: openMessageBackend(backendUrl),
    settingsCacheMs: options.settingsCacheMs,
  });
  try {
    const report = await runCrashScenario({
      messaging,
      backendUrl,
      dir,
      seed,
      messages: MESSAGES,
      disrupt: options.disrupt,
      spared: options.spared,
    });
    const { outcome, stats } = report;
    console.log(
      `  ${label}: ${MESSAGES} messages in ${report.durationMs} ms, ${report.kills} kills ` +
        `(${report.started} workers started, ${outcome.workers} took effects), ≥ ${outcome.deliveries} deliveries, ` +
        `${outcome.duplicates} caught by the inbox`,
    );
    assert.deepEqual(outcome.missing, [], 'every message took effect');
    assert.deepEqual(outcome.doubled, [], 'no effect happened twice');
    assert.deepEqual(outcome.unexpected, []);
    assert.equal(outcome.effects, MESSAGES);
    assert.equal(stats.length, 0, 'the queue is empty');
    assert.equal(stats.deadLettered, 0, 'no message was dead-lettered');
    assert.ok(report.kills >= 5, `workers were killed (${report.kills})`);
    assert.ok(outcome.deliveries > MESSAGES, `kills interrupted work: ${outcome.deliveries} deliveries`);
    assert.deepEqual(
      report.exits,
      report.exits.map(() => ({ code: 0, signal: null })),
      `the last workers shut down cleanly\n${report.stderr.join('\n')}`,
    );
    return report;
  } finally {
    await messaging.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A waitUntil condition checked every 100 ms rather than on every turn of the event loop. */
export function paced(condition: () => boolean | Promise<boolean>): () => Promise<boolean> {
  return async () => {
    await delay(100);
    return condition();
  };
}
