import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { type GatewayServer, startGateway } from './index.js';
import { call, deadUrl, startUpstream, type TestUpstream } from './upstream.test-support.js';

const TOKEN = 'admin-token-of-at-least-32-characters!';

describe('gateway admin listener', () => {
  let app: TestUpstream;
  let gateway: GatewayServer;
  let dir: string;
  let file: string;
  let admin: string;
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    app = await startUpstream('app');
    dir = mkdtempSync(join(tmpdir(), 'stratus-gateway-admin-'));
    file = join(dir, 'gateway.json');
    writeFileSync(
      file,
      JSON.stringify({
        upstreams: {
          app: { targets: [app.url] },
          gone: { targets: [await deadUrl()], ejection: { consecutiveFailures: 1 } },
        },
        routes: [
          { name: 'gone', match: { prefix: '/gone' }, upstream: 'gone' },
          { name: 'app', upstream: 'app' },
        ],
      }),
    );
    gateway = await startGateway({ configFile: file, admin: { token: TOKEN } });
    admin = gateway.admin?.url ?? '';
  });
  after(async () => {
    await gateway.close();
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers liveness, and readiness with a warning while an upstream has no target', async () => {
    const live = await call(admin, '/health/live');
    assert.equal(live.status, 200);
    assert.equal(live.headers['content-type'], 'application/health+json');
    assert.deepEqual(live.json(), { status: 'pass' });
    assert.equal((await call(admin, '/health/ready')).json().status, 'pass');
    assert.equal((await call(gateway.url, '/gone/x')).status, 502);
    const ready = await call(admin, '/health/ready');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.json(), {
      status: 'warn',
      version: '1',
      notes: ['no target of upstream "gone" is available'],
    });
  });

  it('counts requests by route, upstream and code in Prometheus metrics, behind the token', async () => {
    await call(gateway.url, '/a');
    await call(gateway.url, '/nowhere/../b');
    assert.equal((await call(admin, '/metrics')).status, 401);
    const metrics = await call(admin, '/metrics', { headers: auth });
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /stratus_gateway_requests_total\{route="app",upstream="app",code="200"\} 2/);
    assert.match(metrics.text, /stratus_gateway_own_answers_total\{reason="upstream-error"\} 1/);
    assert.match(
      metrics.text,
      /stratus_gateway_target_available\{upstream="gone",target="http:\/\/127\.0\.0\.1:\d+"\} 0/,
    );
    assert.match(metrics.text, /stratus_gateway_target_events_total\{upstream="gone",.*event="ejected"\} 1/);
    assert.match(metrics.text, /stratus_gateway_request_duration_seconds_bucket\{le="0\.1",route="app"\} 2/);
  });

  it('shows the upstreams and reloads the file for a bearer of the token, with security headers', async () => {
    const upstreams = await call(admin, '/admin/upstreams', { headers: auth });
    assert.equal(upstreams.status, 200);
    assert.equal(upstreams.headers['cache-control'], 'no-store');
    assert.equal(upstreams.headers['x-content-type-options'], 'nosniff');
    assert.match(String(upstreams.headers['content-security-policy']), /default-src 'none'/);
    const standing =
      upstreams.json<Record<string, { target: string; available: boolean; ejections: number }[]>>();
    assert.equal(standing.app?.[0]?.available, true);
    assert.equal(standing.gone?.[0]?.ejections, 1);
    const reload = await call(admin, '/admin/reload', { method: 'POST', headers: auth });
    assert.deepEqual(reload.json(), { applied: true, version: 2 });
    assert.equal((await call(admin, '/admin/config', { headers: auth })).json().version, 2);
    assert.equal((await call(admin, '/admin/reload', { headers: auth })).status, 405);
  });
});

describe('gateway admin options', () => {
  it('refuses wrong tokens, then refuses the client unchecked for a while', async () => {
    const gateway = await startGateway({ config: { upstreams: {}, routes: [] }, admin: { token: TOKEN } });
    try {
      const admin = gateway.admin?.url ?? '';
      const wrong = { authorization: `Bearer ${'x'.repeat(40)}` };
      const statuses: number[] = [];
      for (let i = 0; i < 11; i++)
        statuses.push((await call(admin, '/admin/upstreams', { headers: wrong })).status);
      assert.deepEqual(statuses, [...Array(10).fill(401), 429]);
      // Even the right token waits now: the check is what the limit protects.
      const right = { authorization: `Bearer ${TOKEN}` };
      assert.equal((await call(admin, '/admin/upstreams', { headers: right })).status, 429);
    } finally {
      await gateway.close();
    }
  });

  it('requires a token of 32 characters or more, and one at all off loopback', async () => {
    const config = { upstreams: {}, routes: [] };
    await assert.rejects(startGateway({ config, admin: { token: 'short' } }), InvalidOptionsError);
    await assert.rejects(startGateway({ config, admin: { host: '0.0.0.0' } }), /token is required/);
  });

  it('without a token: no admin API, metrics for loopback clients', async () => {
    const gateway = await startGateway({ config: { upstreams: {}, routes: [] }, admin: {} });
    try {
      const admin = gateway.admin?.url ?? '';
      assert.equal((await call(admin, '/admin/upstreams')).status, 404);
      assert.equal((await call(admin, '/metrics')).status, 200);
    } finally {
      await gateway.close();
    }
  });
});
