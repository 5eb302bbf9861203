import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { type GatewayServer, startGateway } from './index.js';
import { rawExchange, startUpstream, type TestUpstream } from './upstream.test-support.js';

/** The status of the gateway's answer to raw bytes (0 when none came). */
async function statusOf(url: string, bytes: string): Promise<number> {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(await rawExchange(url, bytes))?.[1] ?? 0);
}

describe('gateway fuzzing', () => {
  let app: TestUpstream;
  let gateway: GatewayServer;
  before(async () => {
    app = await startUpstream('app');
    gateway = await startGateway({
      config: {
        upstreams: { app: { targets: [app.url] } },
        routes: [
          { match: { path: '/users/:id', headers: { 'x-v': { regex: '^\\d+$' } } }, upstream: 'app' },
          {
            match: { prefix: '/api', cookies: { s: { present: true } }, query: { q: 'x' } },
            upstream: 'app',
          },
          { match: { prefix: '/static' }, upstream: 'app', rewrite: { prefix: '/' } },
        ],
      },
    });
  });
  after(async () => {
    await gateway.close();
    await app.close();
  });

  it('answers every request line, header and cookie it is sent with a status below 500, and keeps serving', async () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const pathPart = fc.oneof(
      fc.constantFrom('/users/1', '/api/x', '/static/a/../b', '/%2e%2e/', '//', '/static/%C3%A9', '/users/'),
      text.map((s) => `/${encodeURI(s)}`),
      text,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'DELETE', 'OPTIONS', 'BREW', 'get'),
        pathPart,
        fc.option(
          fc.string({ maxLength: 20 }).map((q) => `?${q}`),
          { nil: '' },
        ),
        text,
        text,
        async (method, path, query, header, cookie) => {
          const line = (value: string) => value.replace(/[\r\n]/g, '');
          const bytes =
            `${method} ${line(path)}${line(query)} HTTP/1.1\r\nHost: fuzz\r\nX-V: ${line(header)}\r\n` +
            `Cookie: ${line(cookie)}\r\nConnection: close\r\n\r\n`;
          const status = await statusOf(gateway.url, bytes);
          assert.ok(status >= 200 && status < 500, `${status} for ${JSON.stringify(bytes)}`);
        },
      ),
      { numRuns: 300 },
    );
    assert.equal(
      await statusOf(gateway.url, 'GET /users/1 HTTP/1.1\r\nHost: x\r\nX-V: 1\r\nConnection: close\r\n\r\n'),
      200,
    );
  });
});
