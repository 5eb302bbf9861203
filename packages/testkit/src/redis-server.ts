/** A throwaway redis-server for tests and benchmarks. */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { onProcessExit } from './exit-cleanup.js';
import {
  delay,
  type Env,
  freePort,
  isExecutable,
  makeServerDir,
  once,
  onPath,
  type RestartOptions,
  START_TIMEOUT_MS,
  type StartedServer,
  sweepAbandonedServers,
  TestServerUnavailableError,
  tail,
  terminate,
  terminateSync,
} from './server-processes.js';

export interface RedisServer extends StartedServer {
  /**
   * SIGKILLs redis-server and starts it again on the same port and directory after `downtimeMs`. A `persistent`
   * server comes back with every acknowledged write; another one comes back empty.
   */
  restart(options?: RestartOptions): Promise<void>;
}

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

export async function withRedis<T>(url: string, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = redisClient(url);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}
