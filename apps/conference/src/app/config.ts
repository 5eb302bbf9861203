import { resolve } from 'node:path';
import { InvalidOptionsError } from '@stratus/core';
import { RESERVATION_GRACE_MS, RESERVATION_WINDOW_MS } from '../domain/contracts.js';

/** What a process does: everything (the embedded default), only the web sites and API, or only the background work. */
export type Role = 'all' | 'web' | 'worker';

export interface ConferenceConfig {
  readonly role: Role;
  readonly port: number;
  readonly host: string;
  /** pino level of the server's log (LOG_LEVEL, default info: a line per request). */
  readonly logLevel: string;
  /** Where the embedded default keeps its SQLite database. */
  readonly dataDir: string;
  /** PostgreSQL for the event store, read models and process state when scaled out. */
  readonly databaseUrl: string | undefined;
  /** The PostgreSQL schema holding everything (DATABASE_SCHEMA, default conference). */
  readonly databaseSchema: string;
  /** Connections per process (DATABASE_POOL_SIZE, default 10). */
  readonly poolSize: number;
  /** Redis for the command queues and timeouts when scaled out. */
  readonly redisUrl: string | undefined;
  /** Prefix of every Redis key (REDIS_PREFIX, default conference:). */
  readonly redisPrefix: string;
  readonly reservationWindowMs: number;
  readonly reservationGraceMs: number;
  /**
   * How long a dead worker's work stays claimed before another takes it over (LEASE_SECONDS, default 10): the lock
   * of a command being handled (renewed while it runs), the lead of the event subscriptions and of each read model.
   */
  readonly leaseMs: number;
  /**
   * Whether the embedded default runs its background work (command consumers, the process manager, the read models)
   * in a worker thread beside the web's main thread, so that it uses two cores (BACKGROUND_THREAD, default true).
   */
  readonly backgroundThread: boolean;
  /**
   * Attempts at an event its handler (the process manager, the reactions, a read model) keeps failing on before it
   * is parked for an operator (HANDLER_MAX_ATTEMPTS, default 10), the first retry after HANDLER_RETRY_SECONDS
   * (default 0.1), each next one twice as late, up to 30 s.
   */
  readonly handlerMaxAttempts: number;
  readonly handlerRetryMs: number;
}

function positiveSeconds(env: NodeJS.ProcessEnv, name: string, fallbackMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new InvalidOptionsError(name, `expected a positive number of seconds, got ${JSON.stringify(raw)}`);
  return Math.round(seconds * 1000);
}

function wholeNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new InvalidOptionsError(
      name,
      `expected a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  return value;
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'on'].includes(raw)) return true;
  if (['false', '0', 'off'].includes(raw)) return false;
  throw new InvalidOptionsError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

/** Reads the configuration from the environment (README: Configuration), failing fast on bad values. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ConferenceConfig {
  const role = (env.ROLE ?? 'all') as Role;
  if (!['all', 'web', 'worker'].includes(role))
    throw new InvalidOptionsError('ROLE', `expected all, web or worker, got ${JSON.stringify(env.ROLE)}`);
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidOptionsError('PORT', `expected a TCP port, got ${JSON.stringify(env.PORT)}`);
  const databaseUrl = env.DATABASE_URL || undefined;
  const redisUrl = env.REDIS_URL || undefined;
  if (role !== 'all' && databaseUrl === undefined) {
    throw new InvalidOptionsError(
      'ROLE',
      'separate web and worker processes share PostgreSQL: set DATABASE_URL',
    );
  }
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel))
    throw new InvalidOptionsError('LOG_LEVEL', `expected a pino level, got ${JSON.stringify(env.LOG_LEVEL)}`);
  const databaseSchema = env.DATABASE_SCHEMA ?? 'conference';
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(databaseSchema))
    throw new InvalidOptionsError(
      'DATABASE_SCHEMA',
      `expected a lower-case identifier, got ${JSON.stringify(databaseSchema)}`,
    );
  const poolSize = Number(env.DATABASE_POOL_SIZE ?? 10);
  if (!Number.isInteger(poolSize) || poolSize < 2 || poolSize > 200)
    throw new InvalidOptionsError(
      'DATABASE_POOL_SIZE',
      `expected 2 to 200, got ${JSON.stringify(env.DATABASE_POOL_SIZE)}`,
    );
  return {
    role,
    port,
    host: env.HOST ?? '0.0.0.0',
    logLevel,
    dataDir: resolve(env.STRATUS_DATA_DIR ?? '.data'),
    databaseUrl,
    databaseSchema,
    poolSize,
    redisUrl,
    redisPrefix: env.REDIS_PREFIX ?? 'conference:',
    reservationWindowMs: positiveSeconds(env, 'RESERVATION_WINDOW_SECONDS', RESERVATION_WINDOW_MS),
    reservationGraceMs: positiveSeconds(env, 'RESERVATION_GRACE_SECONDS', RESERVATION_GRACE_MS),
    leaseMs: positiveSeconds(env, 'LEASE_SECONDS', 10_000),
    backgroundThread: flag(env, 'BACKGROUND_THREAD', true),
    handlerMaxAttempts: wholeNumber(env, 'HANDLER_MAX_ATTEMPTS', 10, 1, 1000),
    handlerRetryMs: positiveSeconds(env, 'HANDLER_RETRY_SECONDS', 100),
  };
}
