/** The processes of the gateway suite: Node servers (READY <url> on stdout), nginx instances, and wrk. */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { UPSTREAM_BODY } from './body.js';

const execFileAsync = promisify(execFile);

export interface Running {
  readonly url: string;
  /** What the READY line said after the URL, if anything. */
  readonly extra?: string;
  stop(): Promise<void>;
}

/** Whether a command is on PATH (or at an absolute path) and runs. */
export function hasCommand(command: string, args: readonly string[] = ['-v']): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).error === undefined;
}

function stopped(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Runs `node --import tsx <script> ...args` and waits for its READY line. */
export async function startNodeServer(script: string, args: readonly string[] = []): Promise<Running> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const ready = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within 30 s`)), 30_000);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
    lines.on('line', (line) => {
      if (!line.startsWith('READY ')) return;
      clearTimeout(timer);
      resolve(line.slice('READY '.length).trim());
    });
  });
  const [url = '', ...rest] = ready.split(' ');
  return { url, extra: rest.join(' ') || undefined, stop: () => stopped(child) };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * nginx with one worker, in the foreground, from a config of its own in a temporary directory: `server` is the
 * body of its one server block (after `listen`), `http` more directives of the http block.
 */
async function startNginx(server: string, http = ''): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'stratus-bench-nginx-'));
  const port = await freePort();
  writeFileSync(
    join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  ${http}
  server {
    listen 127.0.0.1:${port};
    ${server}
  }
}
`,
  );
  const child = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
    try {
      await fetch(url);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error('nginx did not answer within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url,
    async stop() {
      await stopped(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** nginx answering every request with the 1 KiB JSON body itself: the cheapest upstream there is. */
export function startNginxUpstream(): Promise<Running> {
  return startNginx(`location / { default_type application/json; return 200 '${UPSTREAM_BODY}'; }`);
}

/** nginx as a reverse proxy with pooled keep-alive connections to the upstream (the native ceiling). */
export function startNginxProxy(upstream: string): Promise<Running> {
  return startNginx(
    `location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection ""; }`,
    `upstream app { server ${new URL(upstream).host}; keepalive 128; }`,
  );
}

export interface LoadOutcome {
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Non-2xx/3xx answers and socket errors: a row with any is not a valid measurement. */
  readonly errors: number;
}

/**
 * wrk, one thread, `connections` keep-alive connections for `seconds`, each request with `headers` ("Name: value"),
 * with its latency distribution.
 */
export async function wrk(
  url: string,
  connections: number,
  seconds: number,
  headers: readonly string[] = [],
): Promise<LoadOutcome> {
  const args = [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--latency',
    ...headers.flatMap((h) => ['-H', h]),
    url,
  ];
  const { stdout } = await execFileAsync('wrk', args, { timeout: (seconds + 30) * 1000 });
  return parseWrk(stdout);
}

const UNITS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

export function parseWrk(output: string): LoadOutcome {
  const number = (pattern: RegExp) => {
    const match = pattern.exec(output);
    if (match === null) throw new Error(`wrk printed no ${pattern}:\n${output}`);
    return match;
  };
  const latency = (p: string) => {
    const [, value, unit] = number(new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm'));
    return Number(value) * (UNITS[unit as string] as number);
  };
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(output);
  return {
    requestsPerSec: Number(number(/^Requests\/sec:\s+([\d.]+)/m)[1]),
    p50Ms: latency('50'),
    p99Ms: latency('99'),
    errors:
      (socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0) +
      Number(non2xx?.[1] ?? 0),
  };
}
