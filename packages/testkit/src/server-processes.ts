/**
 * What the throwaway servers share: their errors and handles, and the process and file helpers that start, find
 * and stop them. Each started server lives in a temp dir of its own, swept when its owner died.
 */
import { execFile } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Env = Record<string, string | undefined>;

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

const TEMP_PREFIX = 'stratus-testsrv-';
export const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

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

export function isCi(env: Env): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

export function onPath(command: string, env: Env): string | undefined {
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

export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Signals `pid`, waits (bounded) for it to go, escalates to SIGKILL. */
export async function terminate(pid: number, first: NodeJS.Signals): Promise<void> {
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
export function terminateSync(pid: number, first: NodeJS.Signals): void {
  signal(pid, first);
  const deadline = Date.now() + 3_000;
  while (isAlive(pid) && Date.now() < deadline) sleepSync(10);
  if (isAlive(pid)) signal(pid, 'SIGKILL');
}

export function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export function run(
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
export function makeServerDir(kind: 'pg' | 'redis'): string {
  const dir = mkdtempSync(join(tmpdir(), `${TEMP_PREFIX}${kind}-`));
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  return dir;
}

const serverPidFile = (dir: string) =>
  existsSync(join(dir, 'redis.pid')) ? join(dir, 'redis.pid') : join(dir, 'data', 'postmaster.pid');

export function sweepAbandonedServers(): void {
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

export function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => {
    result ??= fn();
    return result;
  };
}

export const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));
