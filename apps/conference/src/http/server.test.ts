import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { type ConferenceConfig, configFromEnv } from '../app/config.js';
import { type ConferenceSystem, startConferenceSystem } from '../app/system.js';
import { html } from './pages/html.js';
import { page } from './pages/layout.js';
import { buildServer } from './server.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-server-'));
const METRICS_TOKEN = 'a-metrics-token-of-at-least-32-bytes';
let config: ConferenceConfig;
let system: ConferenceSystem;
let app: FastifyInstance;

before(async () => {
  config = configFromEnv({
    STRATUS_DATA_DIR: join(directory, 'embedded'),
    REQUEST_TIMEOUT_SECONDS: '20',
    HEADERS_TIMEOUT_SECONDS: '5',
    KEEP_ALIVE_TIMEOUT_SECONDS: '61',
  });
  system = await startConferenceSystem(config);
  app = await buildServer(system, { logger: false });
});
after(async () => {
  await app?.close();
  await system?.stop();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

/** A server for `system` as a process with `env` (added to the embedded default's) would build it. */
async function serverWith(env: Record<string, string>, on = system): Promise<FastifyInstance> {
  return buildServer(on, { logger: false, config: configFromEnv({ STRATUS_DATA_DIR: directory, ...env }) });
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

describe('buildServer', () => {
  test('security headers on every answer: pages, API, errors, health', async () => {
    for (const url of [
      '/',
      '/manage',
      '/api/openapi.json',
      '/api/orders/nothing',
      '/no/such/page',
      '/health/live',
    ]) {
      const answer = await app.inject({ method: 'GET', url });
      const csp = String(answer.headers['content-security-policy']);
      assert.match(csp, /default-src 'none'/, url);
      assert.match(csp, /frame-ancestors 'none'/, url);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, url);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(answer.headers['x-frame-options'], 'DENY', url);
      assert.equal(answer.headers['referrer-policy'], 'no-referrer', url);
      if (url.startsWith('/api/') || url === '/' || url === '/manage')
        assert.equal(answer.headers['cache-control'], 'no-store', url);
    }
  });

  test("the CSP allows exactly the pages' inline countdown script and stylesheet, by their hashes", async () => {
    const csp = String((await app.inject({ method: 'GET', url: '/' })).headers['content-security-policy']);
    const rendered = page({
      site: 'public',
      title: 'Checkout',
      body: html`<p>hello</p>`,
      countdown: true,
    }).value;
    const scripts = [...rendered.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1] ?? '');
    const styles = [...rendered.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((match) => match[1] ?? '');
    assert.equal(scripts.length, 1);
    assert.equal(styles.length, 1);
    assert.match(csp, new RegExp(`script-src ${sha256(scripts[0] ?? '').replace(/[+/]/g, '\\$&')}(;|$)`));
    assert.match(csp, new RegExp(`style-src ${sha256(styles[0] ?? '').replace(/[+/]/g, '\\$&')}(;|$)`));
    assert.doesNotMatch(rendered, /\son[a-z]+=|style="/, 'no inline handlers or style attributes');
  });

  test('the Node server has request, headers and keep-alive timeouts from the configuration', () => {
    assert.equal(app.server.requestTimeout, 20_000);
    assert.equal(app.server.headersTimeout, 5_000);
    assert.equal(app.server.keepAliveTimeout, 61_000);
  });

  test('readiness counts the live workers; with none it says degraded and stays ready', async () => {
    const ready = await app.inject({ method: 'GET', url: '/health/ready' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ok', workers: 1, parkedEvents: 0, failingHandlers: [] });
    // A web process whose workers are all gone.
    const web = await startConferenceSystem({
      ...config,
      dataDir: join(directory, 'web-alone'),
      role: 'web',
    });
    const alone = await buildServer(web, { logger: false, config });
    try {
      const degraded = await alone.inject({ method: 'GET', url: '/health/ready' });
      assert.equal(degraded.statusCode, 200);
      assert.deepEqual(degraded.json(), {
        status: 'degraded',
        workers: 0,
        parkedEvents: 0,
        failingHandlers: [],
      });
    } finally {
      await alone.close();
      await web.stop();
    }
  });

  test('metrics: the embedded default shows them to its own host only', async () => {
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 200);
    const remote = await app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.7' });
    assert.equal(remote.statusCode, 404);
  });

  test('metrics: with METRICS_TOKEN only for its bearer; scaled out without it, not at all', async () => {
    const guarded = await serverWith({ METRICS_TOKEN });
    const scaled = await serverWith({
      DATABASE_URL: 'postgres://db/conference',
      OWNER_TOKEN_SECRET: METRICS_TOKEN,
    });
    try {
      const metrics = (authorization?: string) =>
        guarded.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
      const anonymous = await metrics();
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer');
      assert.equal((await metrics(`Bearer ${METRICS_TOKEN}x`)).statusCode, 401);
      const shown = await metrics(`Bearer ${METRICS_TOKEN}`);
      assert.equal(shown.statusCode, 200);
      assert.match(shown.body, /process_cpu_user_seconds_total/);
      assert.equal((await scaled.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
    } finally {
      await guarded.close();
      await scaled.close();
    }
  });

  test('a worker serves health and metrics only', async () => {
    const worker = await serverWith({
      ROLE: 'worker',
      DATABASE_URL: 'postgres://db/conference',
      METRICS_TOKEN,
    });
    try {
      assert.equal((await worker.inject({ method: 'GET', url: '/health/ready' })).statusCode, 200);
      assert.equal((await worker.inject({ method: 'GET', url: '/api/openapi.json' })).statusCode, 404);
      assert.equal((await worker.inject({ method: 'GET', url: '/manage' })).statusCode, 404);
    } finally {
      await worker.close();
    }
  });
});
