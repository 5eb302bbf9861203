import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { concurrencyLimit } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { httpRateLimit, rateLimitHeaders, setRateLimitHeaders } from './http.js';
import type { RateLimitResult } from './types.js';

const allowed: RateLimitResult = {
  allowed: true,
  limit: 100,
  remaining: 42,
  resetMs: 29_001,
  retryAfterMs: 0,
};
const refused: RateLimitResult = {
  allowed: false,
  limit: 100,
  remaining: 0,
  resetMs: 30_000,
  retryAfterMs: 1_500,
};

describe('rateLimitHeaders', () => {
  test('writes the legacy fields and the draft RateLimit / RateLimit-Policy fields, reset in whole seconds', () => {
    assert.deepEqual(rateLimitHeaders(allowed, { policy: 'api', windowMs: 60_000 }), {
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '42',
      'RateLimit-Reset': '30',
      'RateLimit-Policy': '"api";q=100;w=60',
      RateLimit: '"api";r=42;t=30',
    });
  });

  test('adds Retry-After (seconds, rounded up) to a refusal, and can write one style only', () => {
    assert.deepEqual(rateLimitHeaders(refused, { style: 'legacy' }), {
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '30',
      'Retry-After': '2',
    });
    assert.deepEqual(rateLimitHeaders(refused, { style: 'draft', policy: 'we "quote"' }), {
      'RateLimit-Policy': '"we \\"quote\\"";q=100',
      RateLimit: '"we \\"quote\\"";r=0;t=30',
      'Retry-After': '2',
    });
  });

  test('leaves out what is not finite (a permit that never comes back on its own)', () => {
    const never: RateLimitResult = {
      allowed: false,
      limit: 1,
      remaining: 0,
      resetMs: Infinity,
      retryAfterMs: Infinity,
    };
    assert.deepEqual(rateLimitHeaders(never, { style: 'legacy' }), {
      'RateLimit-Limit': '1',
      'RateLimit-Remaining': '0',
    });
  });

  test('sets them on a plain headers object or on anything with setHeader', () => {
    const plain: Record<string, string> = { 'Content-Type': 'text/plain' };
    setRateLimitHeaders(plain, allowed, { style: 'legacy' });
    assert.equal(plain['RateLimit-Remaining'], '42');
    assert.equal(plain['Content-Type'], 'text/plain');
    const set: string[] = [];
    setRateLimitHeaders(
      { setHeader: (name: string, value: string) => set.push(`${name}: ${value}`) },
      refused,
      { style: 'legacy' },
    );
    assert.deepEqual(set, [
      'RateLimit-Limit: 100',
      'RateLimit-Remaining: 0',
      'RateLimit-Reset: 30',
      'Retry-After: 2',
    ]);
  });
});

describe('httpRateLimit on a loopback node:http server', () => {
  const clock = new VirtualClock();
  const perTenant = fixedWindow({ limit: 2, windowMs: 60_000, clock, name: 'tenant-api' });
  const guard = httpRateLimit({ limiter: perTenant, key: (request) => String(request.headers['x-tenant']) });
  const oneAtATime = concurrencyLimit({ maxInFlight: 1, clock, name: 'uploads' });
  const uploadGuard = httpRateLimit({ limiter: oneAtATime, key: () => 'all' });
  const releaseUpload: (() => void)[] = [];
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer(async (request, response) => {
      const upload = request.url?.startsWith('/upload') === true;
      const admitted = await (upload ? uploadGuard : guard)(request, response);
      if (!admitted) return;
      if (request.url === '/upload?hold') await new Promise<void>((resolve) => releaseUpload.push(resolve));
      response.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const get = (path: string, tenant = 'acme') =>
    fetch(`${base}${path}`, { headers: { 'x-tenant': tenant }, signal: AbortSignal.timeout(5000) });

  test('admits the quota with its headers, then answers 429 with Retry-After; other tenants are unaffected', async () => {
    const first = await get('/');
    assert.equal(first.status, 200);
    assert.equal(await first.text(), 'ok');
    assert.equal(first.headers.get('ratelimit-limit'), '2');
    assert.equal(first.headers.get('ratelimit-remaining'), '1');
    assert.equal(first.headers.get('ratelimit-reset'), '60');
    assert.equal(first.headers.get('ratelimit-policy'), '"tenant-api";q=2;w=60');
    assert.equal(first.headers.get('ratelimit'), '"tenant-api";r=1;t=60');
    assert.equal((await get('/')).status, 200);
    await clock.advance(15_500);
    const third = await get('/');
    assert.equal(third.status, 429);
    assert.equal(third.headers.get('retry-after'), '45');
    assert.equal(third.headers.get('ratelimit-remaining'), '0');
    assert.equal(await third.text(), 'Too Many Requests\n');
    assert.equal((await get('/', 'globex')).status, 200);
  });

  test('a concurrency lease is held until the response closes', async () => {
    const slow = get('/upload?hold');
    for (let i = 0; i < 500 && releaseUpload.length === 0; i++)
      await new Promise((resolve) => setImmediate(resolve));
    assert.equal(releaseUpload.length, 1);
    const busy = await get('/upload');
    assert.equal(busy.status, 429);
    assert.equal(busy.headers.get('retry-after'), null, 'no expiry, so no promise of when');
    releaseUpload.shift()?.();
    assert.equal((await slow).status, 200);
    let next = await get('/upload');
    for (let i = 0; i < 50 && next.status === 429; i++) next = await get('/upload'); // the close event may trail the body
    assert.equal(next.status, 200);
  });
});
