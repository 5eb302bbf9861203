/** A throwaway PostgreSQL cluster for tests and benchmarks. */
import { chownSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { onProcessExit } from './exit-cleanup.js';
import {
  delay,
  describeError,
  type Env,
  freePort,
  isExecutable,
  makeServerDir,
  once,
  onPath,
  type RestartOptions,
  readPid,
  run,
  type StartedServer,
  sweepAbandonedServers,
  TestServerUnavailableError,
  tail,
  terminate,
  terminateSync,
} from './server-processes.js';

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
