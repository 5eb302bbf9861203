import { resolve } from 'node:path';
import { InvalidOptionsError } from '@stratus/core';
import { RESERVATION_GRACE_MS, RESERVATION_WINDOW_MS } from '../domain/contracts.js';
import {
  type AbuseLimitSettings,
  abuseLimitsFromEnv,
  type TrustProxy,
  trustProxyFromEnv,
} from './abuse-settings.js';
import { flag, positiveSeconds, wholeNumber } from './env-values.js';
import { type PaymentsConfig, paymentsConfigFromEnv } from './payments-config.js';

/** What a process does: everything (the embedded default), only the web sites and API, or only the background work. */
export type Role = 'all' | 'web' | 'worker';

export interface ConferenceConfig extends PaymentsConfig {
  readonly role: Role;
  /** The web's port (PORT, default 3000). */
  readonly port: number;
  /** A worker's port for health and metrics (WORKER_PORT, default 0: any free port, logged), so workers share a host. */
  readonly workerPort: number;
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
  /**
   * The key owner tokens are signed with (OWNER_TOKEN_SECRET, at least 32 bytes): required where more than one
   * process may serve the web (ROLE=web, or DATABASE_URL), since every one must accept the others' tokens. Without
   * it the embedded default keeps a generated one in its data directory (owner-token-secret.ts).
   */
  readonly ownerTokenSecret: string | undefined;
  /**
   * The bearer token /metrics asks for (METRICS_TOKEN, at least 32 bytes). Without it a scaled-out process serves no
   * metrics and the embedded default serves them to loopback clients only (metrics-access.ts).
   */
  readonly metricsToken: string | undefined;
  /** How long a client may take to send a whole request, headers and body (REQUEST_TIMEOUT_SECONDS, default 30). */
  readonly requestTimeoutMs: number;
  /** How long a client may take to send a request's headers (HEADERS_TIMEOUT_SECONDS, default 10). */
  readonly headersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open (KEEP_ALIVE_TIMEOUT_SECONDS, default 72). */
  readonly keepAliveTimeoutMs: number;
  /** The web's abuse limits (abuse-settings.ts), undefined when RATE_LIMITS=off. */
  readonly abuseLimits: AbuseLimitSettings | undefined;
  /** Which proxies' X-Forwarded-For names the client (TRUST_PROXY, default none: the peer address is the client). */
  readonly trustProxy: TrustProxy;
}

/** The shortest secret accepted for signing owner tokens or guarding metrics: 256 bits. */
export const MIN_SECRET_BYTES = 32;

function port(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(env[name] || fallback);
  if (!Number.isInteger(value) || value < 0 || value > 65_535)
    throw new InvalidOptionsError(name, `expected a TCP port, got ${JSON.stringify(env[name])}`);
  return value;
}

/** A secret of at least MIN_SECRET_BYTES, or undefined when not set. */
function secret(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name] || undefined;
  if (value !== undefined && Buffer.byteLength(value, 'utf8') < MIN_SECRET_BYTES)
    throw new InvalidOptionsError(
      name,
      `expected at least ${MIN_SECRET_BYTES} bytes (e.g. openssl rand -base64 32), got ${Buffer.byteLength(value, 'utf8')}`,
    );
  return value;
}

/** Reads the configuration from the environment (README: Configuration), failing fast on bad values. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): ConferenceConfig {
  const role = (env.ROLE ?? 'all') as Role;
  if (!['all', 'web', 'worker'].includes(role))
    throw new InvalidOptionsError('ROLE', `expected all, web or worker, got ${JSON.stringify(env.ROLE)}`);
  const databaseUrl = env.DATABASE_URL || undefined;
  const redisUrl = env.REDIS_URL || undefined;
  if (role !== 'all' && databaseUrl === undefined) {
    throw new InvalidOptionsError(
      'ROLE',
      'separate web and worker processes share PostgreSQL: set DATABASE_URL',
    );
  }
  const ownerTokenSecret = secret(env, 'OWNER_TOKEN_SECRET');
  // A process of its own per secret would refuse the others' owner tokens; workers serve no owner.
  if (ownerTokenSecret === undefined && role !== 'worker' && (role === 'web' || databaseUrl !== undefined))
    throw new InvalidOptionsError(
      'OWNER_TOKEN_SECRET',
      `every web process must sign owner tokens with the same secret: set it to ${MIN_SECRET_BYTES} bytes or more`,
    );
  const requestTimeoutMs = positiveSeconds(env, 'REQUEST_TIMEOUT_SECONDS', 30_000);
  const headersTimeoutMs = positiveSeconds(env, 'HEADERS_TIMEOUT_SECONDS', 10_000);
  if (headersTimeoutMs > requestTimeoutMs)
    throw new InvalidOptionsError('HEADERS_TIMEOUT_SECONDS', 'expected at most REQUEST_TIMEOUT_SECONDS');
  const metricsToken = secret(env, 'METRICS_TOKEN');
  if (metricsToken !== undefined && /\s/.test(metricsToken))
    throw new InvalidOptionsError('METRICS_TOKEN', 'expected no spaces: it is sent as a bearer token');
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
    ...paymentsConfigFromEnv(env, databaseUrl !== undefined),
    role,
    port: port(env, 'PORT', 3000),
    workerPort: port(env, 'WORKER_PORT', 0),
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
    ownerTokenSecret,
    metricsToken,
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: positiveSeconds(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 72_000),
    abuseLimits: abuseLimitsFromEnv(env),
    trustProxy: trustProxyFromEnv(env),
  };
}
