/**
 * The backends under the system, behind one shape: the embedded default keeps everything in one SQLite file; scaled
 * out, PostgreSQL holds events, read models and leases, and Redis (or PostgreSQL, without REDIS_URL) the queues.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type LeaseStore, PostgresLeaseStore, SqliteLeaseStore } from '@stratus/coordination';
import { type Clock, exponentialBackoff } from '@stratus/core';
import {
  ALL_DOCUMENTS,
  type AnnouncedChange,
  type DocumentProjectionDefinition,
  type DocumentReader,
  EventStore,
  PostgresEventStoreBackend,
  PostgresProjectionTarget,
  ProjectionRunner,
  postgresDocumentProjection,
  postgresDocumentReader,
  SqliteEventStoreBackend,
  SqliteProjectionTarget,
  sqliteDocumentProjection,
  sqliteDocumentReader,
} from '@stratus/eventsourcing';
import {
  type MessageBackend,
  Messaging,
  PostgresMessageBackend,
  RedisMessageBackend,
  SqliteMessageBackend,
} from '@stratus/messaging';
import {
  MemoryRateLimitStore,
  PostgresRateLimitStore,
  type RateLimitStore,
  RedisRateLimitStore,
} from '@stratus/resilience';
import { NotificationListener, openOwnPool, openSqlite } from '@stratus/sql';
import { Redis } from 'ioredis';
import type { ConferenceConfig } from './config.js';

export interface Infrastructure {
  /** What runs where, for logs and the README's table. */
  readonly description: string;
  readonly store: EventStore;
  readonly messaging: Messaging;
  readonly leases: LeaseStore;
  /** Where the web's abuse limits count: this process's memory, or shared by every web process when scaled out. */
  readonly rateLimits: RateLimitStore;
  reader(view: DocumentProjectionDefinition): DocumentReader;
  /**
   * A runner keeping `view` up to date (single-active across processes through the view's lease); `onChange` hears
   * which documents each batch writes, and 'all' when the view's version starts serving reads (documents read before
   * that came from no version at all).
   */
  runner(view: DocumentProjectionDefinition, onChange: (keys: ViewChange) => void): ProjectionRunner<unknown>;
  /**
   * Where a process without view runners hears the documents the runners of other processes change: 'unheard' first
   * and whenever changes may go unheard from then on, 'all' once they are heard again (any may have changed
   * meanwhile); undefined where nothing tells (the embedded default runs its views in process).
   */
  readonly viewChanges?: (listener: (change: HeardViewChange) => void) => void;
  close(): Promise<void>;
}

/**
 * How long a view or subscription woken by an append waits for the appends right behind it: under load a handful of
 * milliseconds turns one read and one commit per event into one per burst.
 */
export const APPEND_DELAY_MS = 10;

/** The documents a view changed (with their new content when announced with it), or 'all' when any may have. */
export type ViewChange = readonly AnnouncedChange[] | 'all';

/** A view change as another process hears it, or 'unheard': changes may go unheard until the next 'all'. */
export type HeardViewChange = ViewChange | 'unheard';

/** Reports the runner's activation to `onChange` as a change of every document. */
function reportingActivation(
  runner: ProjectionRunner<unknown>,
  onChange: (keys: ViewChange) => void,
): ProjectionRunner<unknown> {
  runner.events.on((event) => {
    if (event.type === 'activated') onChange('all');
  });
  return runner;
}

function runnerOptions(config: ConferenceConfig) {
  return {
    pollIntervalMs: 500,
    leaseMs: config.leaseMs,
    appendDelayMs: APPEND_DELAY_MS,
    ...poisonOptions(config),
  };
}

/** How the system's event handlers treat an event they keep failing on: retried, then parked (config). */
export function poisonOptions(config: ConferenceConfig) {
  return {
    maxAttempts: config.handlerMaxAttempts,
    retryBackoff: exponentialBackoff({ initialMs: config.handlerRetryMs, maxMs: 30_000 }),
  };
}

/**
 * `threadLock`: shared by the threads of this process that open the embedded database (OpenSqliteOptions.threadLock).
 */
export async function openInfrastructure(
  config: ConferenceConfig,
  clock: Clock,
  threadLock?: SharedArrayBuffer,
): Promise<Infrastructure> {
  return config.databaseUrl === undefined
    ? openEmbedded(config, clock, threadLock)
    : openDistributed(config, clock);
}

function openEmbedded(
  config: ConferenceConfig,
  clock: Clock,
  threadLock: SharedArrayBuffer | undefined,
): Infrastructure {
  mkdirSync(config.dataDir, { recursive: true });
  const path = join(config.dataDir, 'conference.db');
  // Group commit: the many small writes of one event-loop turn (appends, queue sends and completions, view
  // updates) share one commit.
  // The web and background threads wake each other when their write transactions end, rather than polling.
  const database = openSqlite(path, { synchronous: 'NORMAL', groupCommit: true, threadLock });
  const store = new EventStore({ backend: new SqliteEventStoreBackend({ database }), clock });
  const messaging = new Messaging({ backend: new SqliteMessageBackend({ database }), clock });
  const target = new SqliteProjectionTarget({ database });
  return {
    description: `SQLite ${path}`,
    store,
    messaging,
    leases: new SqliteLeaseStore({ database }),
    rateLimits: new MemoryRateLimitStore(),
    reader: (view) => sqliteDocumentReader(database, target, view.name),
    runner: (view, onChange) =>
      reportingActivation(
        new ProjectionRunner(
          store,
          target,
          sqliteDocumentProjection(view, { onChange }),
          runnerOptions(config),
        ) as ProjectionRunner<unknown>,
        onChange,
      ),
    async close() {
      await messaging.close();
      await store.close();
      database.close();
    },
  };
}

async function openDistributed(config: ConferenceConfig, clock: Clock): Promise<Infrastructure> {
  const schema = config.databaseSchema;
  // A connection the server ends (a restart, a fail-over, an operator) must not take the process down: its holder's
  // query fails, and the next one connects anew.
  const pool = await openOwnPool({ connectionString: config.databaseUrl as string, max: config.poolSize });
  const store = new EventStore({ backend: new PostgresEventStoreBackend({ pool, schema }), clock });
  const queues: MessageBackend =
    config.redisUrl === undefined
      ? new PostgresMessageBackend({ pool, schema })
      : new RedisMessageBackend({ url: config.redisUrl, keyPrefix: config.redisPrefix });
  const messaging = new Messaging({ backend: queues, clock });
  const target = new PostgresProjectionTarget({ pool, schema });
  // Web processes hear view changes over LISTEN/NOTIFY instead of polling the documents each request waits for:
  // each batch's documents once it committed (the NOTIFY is part of its transaction), so they may cache them.
  const channel = `${schema}_view_changes`;
  const listener = new NotificationListener(() => pool.connect(), channel);
  // Connects on first use: only processes serving the web count requests.
  const limitsClient =
    config.redisUrl === undefined ? undefined : new Redis(config.redisUrl, { lazyConnect: true });
  limitsClient?.on('error', () => {});
  const postgresLimits =
    limitsClient === undefined
      ? new PostgresRateLimitStore({ pool, tablePrefix: `${schema}.rate_limit` })
      : undefined;
  const rateLimits: RateLimitStore =
    postgresLimits ??
    new RedisRateLimitStore({ client: limitsClient as Redis, prefix: `${config.redisPrefix}rate-limit:` });
  const announceAll = () => {
    pool.query('SELECT pg_notify($1, $2)', [channel, ALL_DOCUMENTS]).catch(() => {});
  };
  return {
    description: `PostgreSQL schema "${schema}"${config.redisUrl === undefined ? '' : ', queues on Redis'}`,
    store,
    messaging,
    leases: new PostgresLeaseStore({ pool, schema }),
    rateLimits,
    reader: (view) => postgresDocumentReader(pool, target, view.name, { schema }),
    runner(view, onChange) {
      return reportingActivation(
        new ProjectionRunner(
          store,
          target,
          postgresDocumentProjection(view, { schema, onChange, notifyChannel: channel }),
          runnerOptions(config),
        ) as ProjectionRunner<unknown>,
        (keys) => {
          onChange(keys);
          announceAll();
        },
      );
    },
    viewChanges(hear) {
      // Nothing is heard until LISTEN takes effect, which reports 'all', nor while its connection is down.
      if (!listener.listening) hear('unheard');
      listener.watchAll(
        (payload) =>
          hear(
            payload === undefined || payload === ALL_DOCUMENTS
              ? 'all'
              : (JSON.parse(payload) as AnnouncedChange[]),
          ),
        () => hear('unheard'),
      );
    },
    async close() {
      await listener.close();
      await messaging.close();
      await store.close();
      postgresLimits?.close();
      limitsClient?.disconnect();
      await pool.end();
    },
  };
}
