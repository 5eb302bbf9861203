/**
 * Throwaway PostgreSQL and Redis servers for tests, and per-suite isolation on top of them: a fresh database
 * per PostgreSQL suite, a unique key prefix per Redis suite.
 *
 * The test runner (scripts/run-tests.ts) calls `startSharedTestServers()` once and exports the URLs to the test
 * processes (DATABASE_URL, REDIS_URL), or the reason a server cannot be had (STRATUS_TEST_POSTGRES_UNAVAILABLE,
 * STRATUS_TEST_REDIS_UNAVAILABLE) so suites skip at once saying why. A test file run on its own starts its own
 * servers on first use. With CI=true a missing server is an error, never a skip.
 */
import { randomId } from '@stratus/core';
import type { Redis } from 'ioredis';
import { withPostgres } from './postgres-connections.js';
import { type PostgresServer, startPostgres } from './postgres-server.js';
import { type RedisServer, startRedis, withRedis } from './redis-server.js';
import {
  delay,
  describeError,
  type Env,
  isCi,
  once,
  type StartedServer,
  TestServerUnavailableError,
} from './server-processes.js';

export const POSTGRES_UNAVAILABLE_ENV = 'STRATUS_TEST_POSTGRES_UNAVAILABLE';
export const REDIS_UNAVAILABLE_ENV = 'STRATUS_TEST_REDIS_UNAVAILABLE';

// ---------------------------------------------------------------------------------------------------------------
// Shared servers for a whole test run

export interface SharedTestServers {
  /** Variables for the test processes: server URLs, or the reasons servers are unavailable. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Provides PostgreSQL and Redis for a test run: the servers at DATABASE_URL / REDIS_URL when set (checked
 * reachable), else throwaway ones started now. A server that cannot be had is reported (printed and exported
 * as STRATUS_TEST_*_UNAVAILABLE) so its suites skip; under CI=true it is an error instead.
 */
export async function startSharedTestServers(
  options: { env?: Env; log?: (line: string) => void } = {},
): Promise<SharedTestServers> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.error(line));
  const kinds = [
    {
      label: 'PostgreSQL',
      urlVar: 'DATABASE_URL',
      unavailableVar: POSTGRES_UNAVAILABLE_ENV,
      start: () => startPostgres({ env }),
      probe: (url: string) => withPostgres(url, (client) => client.query('SELECT 1')),
    },
    {
      label: 'Redis',
      urlVar: 'REDIS_URL',
      unavailableVar: REDIS_UNAVAILABLE_ENV,
      start: () => startRedis({ env }),
      probe: (url: string) => withRedis(url, (client) => client.ping()),
    },
  ];
  const outcomes = await Promise.all(
    kinds.map(async (kind) => {
      const given = env[kind.urlVar];
      try {
        if (given) {
          await kind.probe(given);
          return { kind, url: given, server: undefined };
        }
        const server = await kind.start();
        return { kind, url: server.url, server };
      } catch (error) {
        const reason = given
          ? `${kind.urlVar} is set but unreachable: ${describeError(error)}`
          : describeError(error);
        return { kind, reason };
      }
    }),
  );
  const started = outcomes.flatMap((o) => ('server' in o && o.server ? [o.server] : []));
  const stop = once(async () => {
    await Promise.all(started.map((server) => server.stop()));
  });
  const exported: Record<string, string> = {};
  const failures: string[] = [];
  for (const outcome of outcomes) {
    const { kind } = outcome;
    if ('reason' in outcome && outcome.reason !== undefined) {
      failures.push(`${kind.label} unavailable: ${outcome.reason}`);
      exported[kind.unavailableVar] = outcome.reason;
    } else if ('url' in outcome && outcome.url !== undefined) {
      exported[kind.urlVar] = outcome.url;
      log(`${kind.label}: ${outcome.server ? 'started throwaway server at' : 'using'} ${outcome.url}`);
    }
  }
  if (failures.length > 0 && isCi(env)) {
    await stop();
    throw new Error(`CI needs every test server, and:\n${failures.join('\n')}`);
  }
  for (const failure of failures) log(`${failure}\n  -> suites that need it are skipped`);
  return { env: exported, stop };
}

// ---------------------------------------------------------------------------------------------------------------
// Per-suite isolation

export type PostgresSuite =
  | {
      /** URL of a fresh database of its own. */
      readonly url: string;
      readonly database: string;
      readonly skip: false;
      /** Drops the database (disconnecting whoever is still on it). Idempotent. */
      release(): Promise<void>;
    }
  | {
      readonly url: undefined;
      readonly database: undefined;
      /** Why the suite cannot run: pass to `describe(..., { skip })`. */
      readonly skip: string;
      release(): Promise<void>;
    };

export type RedisSuite =
  | {
      readonly url: string;
      /** Prefix every key the suite creates with this. */
      readonly keyPrefix: string;
      readonly skip: false;
      /** Deletes every key under `keyPrefix`. Idempotent. */
      release(): Promise<void>;
    }
  | {
      readonly url: undefined;
      readonly keyPrefix: undefined;
      readonly skip: string;
      release(): Promise<void>;
    };

const noRelease = async () => {};

/** Lower-case letters, digits and `_` only, bounded so names fit PostgreSQL's 63-byte identifiers. */
function sanitize(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_+|_+$/g, '')
      .slice(0, 32) || 'suite'
  );
}

let ownPostgres: Promise<PostgresServer> | undefined;
let ownRedis: Promise<RedisServer> | undefined;

/** The server to use: the env's URL, else one started for this process (stopped when it exits). */
async function serverUrl(
  urlVar: string,
  unavailableVar: string,
  startOwn: () => Promise<StartedServer>,
): Promise<string> {
  const given = process.env[urlVar];
  if (given) return given;
  const unavailable = process.env[unavailableVar];
  if (unavailable) throw new TestServerUnavailableError(unavailable);
  return (await startOwn()).url;
}

/**
 * `reason`, to skip a suite with; under CI=true an error instead: CI runs every suite, so a server (or server
 * binary) it cannot have fails the run.
 */
export function skipUnlessCi(reason: string): string {
  if (isCi(process.env)) throw new Error(`${reason} (CI=true: servers are required)`);
  return reason;
}

function unavailable(label: string, error: unknown): { url: undefined; skip: string } {
  return { url: undefined, skip: skipUnlessCi(`${label} unavailable: ${describeError(error)}`) };
}

/**
 * A fresh database for one suite on the test PostgreSQL server, or `skip` with the reason there is none.
 * Under CI=true an unavailable server throws.
 */
export async function postgresForSuite(name: string): Promise<PostgresSuite> {
  let adminUrl: string;
  try {
    adminUrl = await serverUrl('DATABASE_URL', POSTGRES_UNAVAILABLE_ENV, () => {
      ownPostgres ??= startPostgres();
      return ownPostgres;
    });
  } catch (error) {
    return { ...unavailable('PostgreSQL', error), database: undefined, release: noRelease };
  }
  const database = `stratus_${sanitize(name)}_${randomId(6)}`;
  try {
    await withPostgres(adminUrl, async (client) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await client.query(`CREATE DATABASE "${database}"`);
          return;
        } catch (error) {
          // 55006: someone is connected to template1 right now; it passes.
          if (attempt >= 5 || (error as { code?: string }).code !== '55006') throw error;
          await delay(100 * attempt);
        }
      }
    });
  } catch (error) {
    return { ...unavailable('PostgreSQL', error), database: undefined, release: noRelease };
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    database,
    skip: false,
    release: once(async () => {
      await withPostgres(adminUrl, async (client) => {
        // Connections a suite just closed may still be on their way out: give them up to 2 s before cutting
        // them (FORCE), which would surface in the suite as an error event after its tests ended.
        for (let waited = 0; waited < 2_000; waited += 50) {
          const { rows } = await client.query(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
            [database],
          );
          if (rows[0]?.n === 0) break;
          await delay(50);
        }
        await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
      });
    }),
  };
}

/**
 * A unique key prefix for one suite on the test Redis server, or `skip` with the reason there is none.
 * Under CI=true an unavailable server throws.
 */
export async function redisForSuite(name: string): Promise<RedisSuite> {
  let url: string;
  try {
    url = await serverUrl('REDIS_URL', REDIS_UNAVAILABLE_ENV, () => {
      ownRedis ??= startRedis();
      return ownRedis;
    });
    await withRedis(url, (client) => client.ping());
  } catch (error) {
    return { ...unavailable('Redis', error), keyPrefix: undefined, release: noRelease };
  }
  const keyPrefix = `stratus-test:${sanitize(name)}:${randomId(6)}:`;
  return {
    url,
    keyPrefix,
    skip: false,
    release: once(async () => {
      await withRedis(url, (client) => deleteKeysWithPrefix(client, keyPrefix));
    }),
  };
}

/** SCAN + UNLINK every key starting with `prefix`; returns how many were deleted. */
export async function deleteKeysWithPrefix(client: Redis, prefix: string): Promise<number> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await client.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}
