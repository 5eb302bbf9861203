/**
 * The conference system as real processes (`apps/conference/dist/main.js`, compiled as a deployment runs it;
 * `npm run bench` builds it first): the embedded default (one ROLE=all process on a fresh SQLite data dir) or scaled out (ROLE=web
 * and ROLE=worker processes on PostgreSQL + Redis, a fresh schema and key prefix). Processes are stopped with
 * SIGTERM, then SIGKILL when they linger, and SIGKILLed should this process end first (at its exit, or on SIGINT,
 * SIGTERM or SIGHUP: a test runner ends a file out of time with SIGTERM); the chaos test SIGKILLs one
 * of a scaled deployment and starts another in its place (`replace`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, onProcessExit } from '@stratus/testkit';
import { ApiClient } from './client.js';

const MAIN = fileURLToPath(new URL('../../../../apps/conference/dist/main.js', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const LOOPBACK = '127.0.0.1';
/** Owner tokens are signed with it: every process of a deployment must share it. */
const OWNER_TOKEN_SECRET = 'bench-conference-owner-token-secret-0123456789';
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
/** A process is SIGKILLed after this long whatever happens (a run never comes near it). */
const LIFETIME_MS = 20 * 60_000;
const MAX_KEPT_STDERR = 8 * 1024;

/** The variables of the app's configuration: none leaks in from this process's environment. */
const CONFIG_VARIABLES = [
  'PORT',
  'WORKER_PORT',
  'METRICS_TOKEN',
  'REQUEST_TIMEOUT_SECONDS',
  'HEADERS_TIMEOUT_SECONDS',
  'KEEP_ALIVE_TIMEOUT_SECONDS',
  'HOST',
  'STRATUS_DATA_DIR',
  'DATABASE_URL',
  'DATABASE_SCHEMA',
  'DATABASE_POOL_SIZE',
  'REDIS_URL',
  'REDIS_PREFIX',
  'ROLE',
  'RESERVATION_WINDOW_SECONDS',
  'RESERVATION_GRACE_SECONDS',
  'LEASE_SECONDS',
  'BACKGROUND_THREAD',
  'OWNER_TOKEN_SECRET',
  'LOG_LEVEL',
  'RATE_LIMITS',
  'TRUST_PROXY',
  'PAYMENTS',
  'PAYMENTS_WEBHOOK_SECRET',
  'PAYMENTS_ALLOW_SIMULATED',
];

/** One process of the system. */
export class AppProcess {
  readonly role: 'all' | 'web' | 'worker';
  readonly port: number;
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  #stderr = '';
  #exit: string | undefined;

  constructor(role: 'all' | 'web' | 'worker', port: number, env: Record<string, string>) {
    this.role = role;
    this.port = port;
    const childEnv: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env))
      if (value !== undefined && !CONFIG_VARIABLES.includes(name)) childEnv[name] = value;
    Object.assign(childEnv, env, {
      ROLE: role,
      // A worker serves its health on WORKER_PORT, the others on PORT.
      PORT: String(port),
      WORKER_PORT: String(port),
      HOST: LOOPBACK,
      OWNER_TOKEN_SECRET,
      // A log line per request would be measured too; warnings and errors still go to stdout.
      LOG_LEVEL: 'warn',
      // The generator places every order from one address: the app's abuse limits would refuse most of them.
      RATE_LIMITS: 'off',
      // Registrants pay at the simulated processor, which runs only on the embedded default unless asked for.
      PAYMENTS: 'simulated',
    });
    // stdout carries the app's log (pino, warn level here): discarded, or kept in STRATUS_BENCH_APP_LOG_DIR (an
    // existing directory) as <role>-<port>.log. STRATUS_BENCH_APP_NODE_ARGS adds flags to every app process (e.g.
    // `--cpu-prof --cpu-prof-dir=prof`).
    const extra = process.env.STRATUS_BENCH_APP_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
    const args = [...extra, MAIN];
    const logDir = process.env.STRATUS_BENCH_APP_LOG_DIR;
    const stdout = logDir ? openSync(join(logDir, `${role}-${port}.log`), 'a') : 'ignore';
    this.#child = spawn(process.execPath, args, {
      cwd: REPO_ROOT,
      env: childEnv,
      stdio: ['ignore', stdout, 'pipe'],
    });
    if (typeof stdout === 'number') closeSync(stdout);
    // However this process ends short of SIGKILL (a test runner's timeout sends SIGTERM), the app goes with it.
    const forget = onProcessExit(() => this.#child.kill('SIGKILL'));
    const lifetime = setTimeout(() => this.#child.kill('SIGKILL'), LIFETIME_MS);
    lifetime.unref();
    this.#child.stderr?.setEncoding('utf8');
    this.#child.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-MAX_KEPT_STDERR);
    });
    this.#exited = new Promise<void>((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#exit = signal === null ? `exit code ${code}` : `signal ${signal}`;
        clearTimeout(lifetime);
        forget();
        resolve();
      });
      this.#child.once('error', (error) => {
        this.#exit = `spawn error: ${error.message}`;
        clearTimeout(lifetime);
        forget();
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Why it is gone, with the end of its stderr; undefined while it runs. */
  get exit(): string | undefined {
    if (this.#exit === undefined) return undefined;
    const tail = this.#stderr.trim().split('\n').slice(-5).join(' | ');
    return `${this.role} on port ${this.port}: ${this.#exit}${tail ? `: ${tail}` : ''}`;
  }

  /** Waits until GET /health/ready answers 200; rejects when the process dies or the time is up. */
  async ready(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    const client = new ApiClient({ host: LOOPBACK, port: this.port, maxSockets: 1 });
    const deadline = performance.now() + timeoutMs;
    try {
      for (;;) {
        if (this.#exit !== undefined) throw new Error(`the process ended before it was ready: ${this.exit}`);
        const answer = await client.send('GET', '/health/ready', { timeoutMs: 1_000 }).catch(() => undefined);
        if (answer?.status === 200) return;
        if (performance.now() > deadline)
          throw new Error(`${this.role} on port ${this.port} not ready within ${timeoutMs / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      client.close();
    }
  }

  /** User + system CPU seconds the process (all its threads) has used so far; undefined without /proc. */
  cpuSeconds(): number | undefined {
    return this.pid === undefined || this.#exit !== undefined ? undefined : processCpuSeconds(this.pid);
  }

  /** SIGKILL, as a crash would end it; resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.#exit !== undefined) return;
    this.#child.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERM, then SIGKILL if it has not exited within the grace period. */
  async stop(): Promise<void> {
    if (this.#exit !== undefined) return;
    this.#child.kill('SIGTERM');
    const graceful = await Promise.race([
      this.#exited.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), STOP_GRACE_MS).unref()),
    ]);
    if (!graceful) {
      this.#child.kill('SIGKILL');
      await this.#exited;
    }
  }
}

/** Linux's USER_HZ: the unit of /proc/<pid>/stat times (100 on every mainstream kernel configuration). */
const CLOCK_TICKS = 100;

/** utime + stime of a process from /proc/<pid>/stat, in seconds; undefined where there is no /proc. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU time of the whole machine (all cores) from /proc/stat, in seconds. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest times are already counted in user and nice).
    const total = ticks.slice(0, 8).reduce((sum, n) => sum + n, 0);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    return { busy: (total - idle) / CLOCK_TICKS, total: total / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

export interface Deployment {
  readonly impl: 'embedded' | 'scaled';
  /** The ports the load generator spreads registrations over (round robin). */
  readonly webPorts: readonly number[];
  readonly processes: readonly AppProcess[];
  /** What runs where, for the results file. */
  readonly description: Record<string, unknown>;
  /** The processes that died, with why; empty while all run. */
  deaths(): string[];
  stop(): Promise<void>;
}

const startedTogether = async (processes: readonly AppProcess[]) => {
  try {
    await Promise.all(processes.map((p) => p.ready()));
  } catch (error) {
    await Promise.all(processes.map((p) => p.stop()));
    throw error;
  }
};

const deathsOf = (processes: readonly AppProcess[]) => () =>
  processes.map((p) => p.exit).filter((exit): exit is string => exit !== undefined);

/** One ROLE=all process on a fresh temporary data dir (SQLite), as `npm start` runs it. */
export async function startEmbedded(): Promise<Deployment> {
  const dataDir = mkdtempSync(join(tmpdir(), 'stratus-bench-conference-'));
  const app = new AppProcess('all', await freePort(), { STRATUS_DATA_DIR: dataDir });
  try {
    await startedTogether([app]);
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    impl: 'embedded',
    webPorts: [app.port],
    processes: [app],
    description: {
      processes:
        '1 × ROLE=all: the web sites and API on its main thread, all background work in a worker thread',
      storage: 'SQLite file in a fresh temporary STRATUS_DATA_DIR (WAL, synchronous NORMAL: the app default)',
    },
    deaths: deathsOf([app]),
    async stop() {
      await app.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ScaledOptions {
  readonly databaseUrl: string;
  readonly schema: string;
  readonly redisUrl: string;
  readonly redisPrefix: string;
  readonly webProcesses: number;
  readonly workerProcesses: number;
  /** More of the app's settings for every process (e.g. RESERVATION_WINDOW_SECONDS); default none. */
  readonly settings?: Readonly<Record<string, string>>;
}

export interface ScaledDeployment extends Deployment {
  /**
   * SIGKILLs one of its processes and starts another of the same role on the same port (so clients of that port
   * find it again); resolves with it once it is ready. `processes` then lists the new one in its place.
   */
  replace(process: AppProcess): Promise<AppProcess>;
}

/**
 * `webProcesses` ROLE=web processes on ports of their own and `workerProcesses` ROLE=worker processes, on one
 * PostgreSQL schema and one Redis key prefix. The first web process starts alone (it creates the schema), the
 * others then together.
 */
export async function startScaled(options: ScaledOptions): Promise<ScaledDeployment> {
  const env = {
    ...options.settings,
    DATABASE_URL: options.databaseUrl,
    DATABASE_SCHEMA: options.schema,
    REDIS_URL: options.redisUrl,
    REDIS_PREFIX: options.redisPrefix,
  };
  const roles = [
    ...Array.from({ length: options.webProcesses }, () => 'web' as const),
    ...Array.from({ length: options.workerProcesses }, () => 'worker' as const),
  ];
  const processes: AppProcess[] = [];
  try {
    for (const [index, role] of roles.entries()) {
      processes.push(new AppProcess(role, await freePort(), env));
      if (index === 0) await startedTogether(processes);
    }
    await startedTogether(processes);
  } catch (error) {
    await Promise.all(processes.map((p) => p.stop()));
    throw error;
  }
  return {
    impl: 'scaled',
    webPorts: processes.filter((p) => p.role === 'web').map((p) => p.port),
    get processes() {
      return processes;
    },
    description: {
      processes:
        `${options.webProcesses} × ROLE=web (the generator spreads registrations round robin over their ports), ` +
        `${options.workerProcesses} × ROLE=worker (their HTTP ports serve health only here)`,
      storage: `PostgreSQL schema "${options.schema}" (events, read models, leases), Redis prefix "${options.redisPrefix}" (queues)`,
      poolSizePerProcess: 'DATABASE_POOL_SIZE default (10)',
    },
    deaths: deathsOf(processes),
    async replace(killed) {
      const index = processes.indexOf(killed);
      if (index < 0)
        throw new Error(`${killed.role} on port ${killed.port} is not a process of this deployment`);
      await killed.kill();
      const replacement = new AppProcess(killed.role, killed.port, env);
      processes[index] = replacement;
      await replacement.ready();
      return replacement;
    },
    async stop() {
      await Promise.all(processes.map((p) => p.stop()));
    },
  };
}

export const loopbackHost = LOOPBACK;
