/**
 * `npm start` as a real process: a setting that cannot work, or a port that is taken, stops it with one line naming
 * the setting (exit code 1, no stack trace); workers on one host each take a port of their own.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type ChildHandle, freePort, postgresForSuite, runChild } from '@stratus/testkit';

const MAIN = new URL('./main.ts', import.meta.url);
const directory = mkdtempSync(join(tmpdir(), 'conference-main-'));
const postgres = await postgresForSuite('conference-main');
after(async () => {
  await postgres.release();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

/** The app's settings, none inherited from the test run (which sets DATABASE_URL and REDIS_URL for its suites). */
const UNSET = Object.fromEntries(
  ['DATABASE_URL', 'REDIS_URL', 'ROLE', 'PORT', 'WORKER_PORT', 'OWNER_TOKEN_SECRET', 'METRICS_TOKEN'].map(
    (name) => [name, undefined],
  ),
);

let runs = 0;
function start(env: Record<string, string>, main: URL = MAIN, from?: 'compiled'): ChildHandle {
  return runChild(main, {
    env: { ...UNSET, HOST: '127.0.0.1', STRATUS_DATA_DIR: join(directory, `run${++runs}`), ...env },
    lifetimeMs: 60_000,
    ...(from === undefined ? {} : { from }),
  });
}

/** It ended with exit code 1 and one line on stderr naming `setting`. */
async function refused(child: ChildHandle, setting: string): Promise<string> {
  const exit = await child.exited;
  assert.equal(exit.code, 1, child.stderr);
  // Node's own warnings (node:sqlite is experimental on Node 22 and 24) are not the app's output.
  const lines = child.stderr
    .trim()
    .split('\n')
    .filter((line) => !/^\(node:\d+\) \w*Warning:|^\(Use `node --trace-warnings/.test(line));
  assert.equal(lines.length, 1, `one line, no stack trace:\n${child.stderr}`);
  assert.match(lines[0] ?? '', new RegExp(`^conference: cannot start: .*${setting}`));
  return lines[0] ?? '';
}

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { port: address.port, server };
}

async function readiness(port: number): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(`http://127.0.0.1:${port}/health/ready`, { signal: AbortSignal.timeout(5_000) });
  return { status: answer.status, body: await answer.json() };
}

describe('npm start', () => {
  test('the compiled app (as `npm run build` leaves it) starts on the embedded default', async (t) => {
    // Its background thread's module is .js there, not .ts (it once looked for the source and exited at start).
    const compiled = new URL('../dist/main.js', import.meta.url);
    assert.ok(
      existsSync(compiled),
      'apps/conference/dist/main.js: run `npm run build` first (`npm test` does)',
    );
    const port = await freePort();
    const app = start({ PORT: String(port) }, compiled, 'compiled');
    t.after(() => app.stop(10_000));
    await app.nextMessage(
      (message) => (message as { msg?: unknown }).msg === 'conference system ready',
      30_000,
    );
    assert.deepEqual(await readiness(port), {
      status: 200,
      body: { status: 'ok', workers: 1, parkedEvents: 0, failingHandlers: [] },
    });
  });

  test('a setting that cannot work: one line naming it', async () => {
    await refused(start({ OWNER_TOKEN_SECRET: 'short' }), 'OWNER_TOKEN_SECRET');
    await refused(
      start({ ROLE: 'web', DATABASE_URL: 'postgres://db.invalid/conference' }),
      'OWNER_TOKEN_SECRET',
    );
  });

  test('a port in use: one line naming PORT', async () => {
    const { port, server } = await occupiedPort();
    try {
      const line = await refused(start({ PORT: String(port), BACKGROUND_THREAD: 'false' }), 'PORT');
      assert.match(line, new RegExp(`PORT=${port}: the port is in use`));
    } finally {
      server.close();
    }
  });
});

describe('worker processes on one host', { skip: postgres.skip }, () => {
  test('each serves health on a port of its own; a taken WORKER_PORT is one line naming it', async () => {
    const env = { ROLE: 'worker', DATABASE_URL: postgres.url as string, DATABASE_SCHEMA: 'main_workers' };
    const workers: ChildHandle[] = [];
    try {
      const ports: number[] = [];
      for (let i = 0; i < 2; i++) {
        const worker = start(env);
        workers.push(worker);
        const ready = await worker.nextMessage<{ port: number }>(
          (message) => String((message as { msg?: unknown }).msg).startsWith('worker ready'),
          30_000,
        );
        ports.push(ready.port);
      }
      assert.notEqual(ports[0], ports[1]);
      for (const port of ports)
        assert.deepEqual(await readiness(port), {
          status: 200,
          body: { status: 'ok', workers: 2, parkedEvents: 0, failingHandlers: [] },
        });
      await refused(start({ ...env, WORKER_PORT: String(ports[0]) }), 'WORKER_PORT');
    } finally {
      for (const worker of workers) await worker.stop(10_000);
    }
  });
});
