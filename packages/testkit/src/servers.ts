/**
 * Throwaway PostgreSQL and Redis servers for tests, and per-suite isolation on top of them: a fresh database
 * per PostgreSQL suite, a unique key prefix per Redis suite.
 *
 * The test runner (scripts/run-tests.ts) calls `startSharedTestServers()` once and exports the URLs to the test
 * processes (DATABASE_URL, REDIS_URL), or the reason a server cannot be had (STRATUS_TEST_POSTGRES_UNAVAILABLE,
 * STRATUS_TEST_REDIS_UNAVAILABLE) so suites skip at once saying why. A test file run on its own starts its own
 * servers on first use. With CI=true a missing server is an error, never a skip.
 */
import { execFile, spawn } from 'node:child_process';
import {
  accessSync,
  chownSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomId } from '@stratus/core';
import { Redis } from 'ioredis';
import { onProcessExit } from './exit-cleanup.js';
import { withPostgres } from './postgres-connections.js';

type Env = Record<string, string | undefined>;

/** A server the test kit could not start or reach; `message` is the reason, meant for a skip notice. */
export class TestServerUnavailableError extends Error {
  override name = 'TestServerUnavailableError';
}

export interface StartedServer {
  /** Connection URL on 127.0.0.1. */
  readonly url: string;
  readonly port: number;
  /** Stops the server and removes its files. Idempotent. */
  stop(): Promise<void>;
}

export interface RestartOptions {
  /** How long the server stays down before it starts again; default 0. */
  downtimeMs?: number;
}

export interface PostgresServer extends StartedServer {
  readonly dataDir: string;
  /**
   * Stops the server (`pg_ctl stop -m fast`: every client connection is cut, committed data is kept) and starts it
   * again on the same port and data directory after `downtimeMs`, for tests of clients that must reconnect on their
   * own. Fast rather than immediate: with this server's durability off, a crash-like stop may lose the last
   * acknowledged commits, which would test PostgreSQL's settings instead of the client.
   */
  restart(options?: RestartOptions): Promise<void>;
}

export interface RedisServer extends StartedServer {
  /**
   * SIGKILLs redis-server and starts it again on the same port and directory after `downtimeMs`. A `persistent`
   * server comes back with every acknowledged write; another one comes back empty.
   */
  restart(options?: RestartOptions): Promise<void>;
}

export const POSTGRES_UNAVAILABLE_ENV = 'STRATUS_TEST_POSTGRES_UNAVAILABLE';
export const REDIS_UNAVAILABLE_ENV = 'STRATUS_TEST_REDIS_UNAVAILABLE';

const TEMP_PREFIX = 'stratus-testsrv-';
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------------------------
// Small process and file helpers

/** A port that was free on 127.0.0.1 a moment ago (the OS picked it for a listener on port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not read the port'))));
    });
  });
}

function isCi(env: Env): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(command: string, env: Env): string | undefined {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (dir && isExecutable(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

const hasProc = existsSync('/proc/self/stat');

/** True while `pid` runs (a zombie nobody reaps counts as gone: in containers PID 1 may never reap it). */
function isAlive(pid: number): boolean {
  if (hasProc) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const state = stat.charAt(stat.lastIndexOf(')') + 2);
      return state !== 'Z' && state !== 'X';
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Signals `pid`, waits (bounded) for it to go, escalates to SIGKILL. */
async function terminate(pid: number, first: NodeJS.Signals): Promise<void> {
  signal(pid, first);
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      signal(pid, 'SIGKILL');
      return;
    }
    await delay(20);
  }
}

/** The synchronous twin of `terminate`, for process-exit handlers where nothing async runs any more. */
function terminateSync(pid: number, first: NodeJS.Signals): void {
  signal(pid, first);
  const deadline = Date.now() + 3_000;
  while (isAlive(pid) && Date.now() < deadline) sleepSync(10);
  if (isAlive(pid)) signal(pid, 'SIGKILL');
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function run(
  file: string,
  args: readonly string[],
  options: { cwd: string; env: Env },
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { cwd: options.cwd, env: options.env, timeout: START_TIMEOUT_MS, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${stderr.trim() || error.message}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}

/**
 * Each started server lives in its own temp dir holding `owner.pid` (the test process) and the server's pid
 * file. Servers whose owner died without cleaning up (SIGKILL) are stopped by the next start.
 */
function makeServerDir(kind: 'pg' | 'redis'): string {
  const dir = mkdtempSync(join(tmpdir(), `${TEMP_PREFIX}${kind}-`));
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  return dir;
}

const serverPidFile = (dir: string) =>
  existsSync(join(dir, 'redis.pid')) ? join(dir, 'redis.pid') : join(dir, 'data', 'postmaster.pid');

function sweepAbandonedServers(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((entry) => entry.startsWith(TEMP_PREFIX));
  } catch {
    return;
  }
  for (const entry of entries) {
    const dir = join(tmpdir(), entry);
    try {
      const owner = readPid(join(dir, 'owner.pid'));
      if (owner !== undefined ? isAlive(owner) : Date.now() - statSync(dir).mtimeMs < 60_000) continue;
      const pid = readPid(serverPidFile(dir));
      // Only ever signal a process that is still the server (pids get reused).
      if (pid !== undefined && /postgres|redis-server/.test(commandLineOf(pid)))
        terminateSync(pid, 'SIGQUIT');
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Another process may be sweeping the same dir.
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL

export interface PostgresBinaries {
  readonly initdb: string;
  readonly pgCtl: string;
}

/**
 * Finds initdb and pg_ctl: `STRATUS_TEST_POSTGRES_BIN` (a bin directory) if set, else the highest version
 * under /usr/lib/postgresql (Debian), else PATH. Returns the reason when there are none.
 */
export function findPostgresBinaries(env: Env = process.env): PostgresBinaries | { reason: string } {
  const fromDir = (dir: string) =>
    isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'pg_ctl'))
      ? { initdb: join(dir, 'initdb'), pgCtl: join(dir, 'pg_ctl') }
      : undefined;
  if (env.STRATUS_TEST_POSTGRES_BIN) {
    return (
      fromDir(env.STRATUS_TEST_POSTGRES_BIN) ?? {
        reason: `STRATUS_TEST_POSTGRES_BIN=${env.STRATUS_TEST_POSTGRES_BIN} holds no initdb and pg_ctl`,
      }
    );
  }
  let versions: string[] = [];
  try {
    versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  } catch {
    // Not a Debian-style install.
  }
  for (const version of versions) {
    const found = fromDir(join('/usr/lib/postgresql', version, 'bin'));
    if (found) return found;
  }
  const initdb = onPath('initdb', env);
  const pgCtl = onPath('pg_ctl', env);
  if (initdb && pgCtl) return { initdb, pgCtl };
  return {
    reason:
      'PostgreSQL binaries not found (no /usr/lib/postgresql/*/bin, no initdb/pg_ctl on PATH); ' +
      'install postgresql or set DATABASE_URL',
  };
}

/** PostgreSQL refuses to run as root: then every server command runs as the `postgres` user. */
function postgresRunner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const fields = line?.split(':');
  if (!fields) {
    throw new TestServerUnavailableError(
      'running as root and there is no "postgres" user to run PostgreSQL as; set DATABASE_URL',
    );
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

export interface StartPostgresOptions {
  env?: Env;
  /**
   * Keep PostgreSQL's durable defaults (fsync, synchronous_commit and full_page_writes on), for benchmarks whose
   * figures must include the cost of a durable commit. Default false: durability off, as tests want.
   */
  durable?: boolean;
}

/**
 * Starts a throwaway PostgreSQL cluster on a free loopback port (trust auth, user `postgres`, durability off
 * unless `durable`: for tests and benchmarks only). Rejects with TestServerUnavailableError saying why when it
 * cannot.
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const env = options.env ?? process.env;
  const binaries = findPostgresBinaries(env);
  if ('reason' in binaries) throw new TestServerUnavailableError(binaries.reason);
  const runner = postgresRunner();
  sweepAbandonedServers();

  const dir = makeServerDir('pg');
  const dataDir = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');
  let postmaster: number | undefined;
  const unregister = onProcessExit(() => {
    if (postmaster !== undefined) terminateSync(postmaster, 'SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
  });
  const childEnv: Env = { PATH: env.PATH, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TZ: 'UTC' };
  const exec = (binary: string, args: string[]) =>
    runner
      ? run('runuser', ['-u', 'postgres', '--', binary, ...args], { cwd: dir, env: childEnv })
      : run(binary, args, { cwd: dir, env: childEnv });

  try {
    if (runner) chownSync(dir, runner.uid, runner.gid);
    await exec(binaries.initdb, [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--auth=trust',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const settings = [
        '-c listen_addresses=127.0.0.1',
        `-p ${port}`,
        `-k ${dir}`,
        ...(options.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']),
        '-c max_connections=300',
      ].join(' ');
      const startServer = async () => {
        await exec(binaries.pgCtl, ['-D', dataDir, '-l', logFile, '-w', '-t', '30', '-o', settings, 'start']);
        postmaster = readPid(join(dataDir, 'postmaster.pid'));
      };
      try {
        await startServer();
      } catch (error) {
        // Another process may have taken the port between freePort() and the bind: try another one.
        if (attempt < 3 && /already in use|could not bind/i.test(tail(logFile))) continue;
        throw error;
      }
      const server: PostgresServer = {
        url: `postgres://postgres@127.0.0.1:${port}/postgres`,
        port,
        dataDir,
        restart: async ({ downtimeMs = 0 } = {}) => {
          await exec(binaries.pgCtl, ['-D', dataDir, '-m', 'fast', '-w', '-t', '30', 'stop']);
          postmaster = undefined;
          await delay(downtimeMs);
          try {
            await startServer();
          } catch (error) {
            const log = tail(logFile);
            throw new Error(
              `PostgreSQL did not come back on port ${port}: ${describeError(error)}${log ? `\n--- postgres.log ---\n${log}` : ''}`,
            );
          }
        },
        stop: once(async () => {
          unregister();
          if (postmaster !== undefined) await terminate(postmaster, 'SIGQUIT');
          rmSync(dir, { recursive: true, force: true });
        }),
      };
      return server;
    }
  } catch (error) {
    const log = tail(logFile);
    unregister();
    if (postmaster !== undefined) await terminate(postmaster, 'SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
    const reason = error instanceof Error ? error.message : String(error);
    throw new TestServerUnavailableError(
      `could not start PostgreSQL: ${reason}${log ? `\n--- postgres.log ---\n${log}` : ''}`,
    );
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => {
    result ??= fn();
    return result;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Redis

/** Finds redis-server: `STRATUS_TEST_REDIS_SERVER` if set, else PATH. Returns the reason when there is none. */
export function findRedisServer(env: Env = process.env): string | { reason: string } {
  if (env.STRATUS_TEST_REDIS_SERVER) {
    return isExecutable(env.STRATUS_TEST_REDIS_SERVER)
      ? env.STRATUS_TEST_REDIS_SERVER
      : { reason: `STRATUS_TEST_REDIS_SERVER=${env.STRATUS_TEST_REDIS_SERVER} is not an executable` };
  }
  return (
    onPath('redis-server', env) ?? {
      reason: 'redis-server not found on PATH; install redis-server or set REDIS_URL',
    }
  );
}

/** Sends PING over a raw socket; true on +PONG. */
function redisPing(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

export interface StartRedisOptions {
  env?: Env;
  /**
   * Write every change to an append-only file, fsynced before the reply (`--appendonly yes --appendfsync always`),
   * so the server survives a SIGKILL (see `restart`). Default false: nothing is persisted.
   */
  persistent?: boolean;
}

/** A redis-server process of ours; `exited` turns true once it is gone. */
interface RedisProcess {
  readonly pid: number | undefined;
  exited: boolean;
}

function launchRedis(binary: string, args: readonly string[], dir: string, env: Env): RedisProcess {
  // A child of ours, not a daemon, so it cannot outlive us unnoticed; unref'd so it never keeps us alive.
  const child = spawn(binary, args, { cwd: dir, stdio: 'ignore', env: { PATH: env.PATH } });
  child.unref();
  const launched: RedisProcess = { pid: child.pid, exited: false };
  child.once('exit', () => {
    launched.exited = true;
  });
  child.once('error', () => {
    launched.exited = true;
  });
  return launched;
}

/** Waits (bounded) until the server answers PING; false when it exited or did not answer in time. */
async function redisReady(port: number, server: RedisProcess): Promise<boolean> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!server.exited && Date.now() < deadline) {
    if (await redisPing(port, 1_000)) return true;
    await delay(20);
  }
  return false;
}

/** Starts a throwaway redis-server on a free loopback port (nothing persisted unless `persistent`). */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const env = options.env ?? process.env;
  const binary = findRedisServer(env);
  if (typeof binary !== 'string') throw new TestServerUnavailableError(binary.reason);
  sweepAbandonedServers();

  for (let attempt = 1; ; attempt++) {
    const dir = makeServerDir('redis');
    const logFile = join(dir, 'redis.log');
    const port = await freePort();
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      ...(options.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
      '--dir',
      dir,
      '--pidfile',
      join(dir, 'redis.pid'),
      '--logfile',
      logFile,
    ];
    let server = launchRedis(binary, args, dir, env);
    const kill = () => {
      if (server.pid !== undefined && !server.exited) terminateSync(server.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    };
    const unregister = onProcessExit(kill);

    if ((await redisReady(port, server)) && server.pid !== undefined) {
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        restart: async ({ downtimeMs = 0 } = {}) => {
          if (server.pid !== undefined && !server.exited) await terminate(server.pid, 'SIGKILL');
          await delay(downtimeMs);
          server = launchRedis(binary, args, dir, env);
          if (!(await redisReady(port, server))) {
            const log = tail(logFile);
            throw new Error(
              `redis-server did not come back on port ${port}${log ? `\n--- redis.log ---\n${log}` : ''}`,
            );
          }
        },
        stop: once(async () => {
          unregister();
          if (server.pid !== undefined && !server.exited) await terminate(server.pid, 'SIGTERM');
          rmSync(dir, { recursive: true, force: true });
        }),
      };
    }
    const log = tail(logFile);
    unregister();
    kill();
    if (attempt < 3 && /already in use|could not create server/i.test(log)) continue;
    throw new TestServerUnavailableError(
      `could not start redis-server (${server.exited ? 'it exited' : 'not ready in time'})${log ? `\n--- redis.log ---\n${log}` : ''}`,
    );
  }
}

function redisClient(url: string): Redis {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 5_000,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  client.on('error', () => {
    // Surfaced through the failing command.
  });
  return client;
}

async function withRedis<T>(url: string, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = redisClient(url);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Shared servers for a whole test run

export interface SharedTestServers {
  /** Variables for the test processes: server URLs, or the reasons servers are unavailable. */
  readonly env: Record<string, string>;
  stop(): Promise<void>;
}

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));

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
