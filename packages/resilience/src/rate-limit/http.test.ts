import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { concurrencyLimit } from './concurrency.js';
import { fixedWindow } from './fixed-window.js';
import { combineRateLimitHeaders, httpRateLimit, rateLimitHeaders, setRateLimitHeaders } from './http.js';
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
  test('advertises a sub-second window as its quota scaled to whole seconds, never more than allowed', () => {
    const policy = (limit: number, windowMs: number) =>
      rateLimitHeaders({ ...allowed, limit }, { policy: 'p', windowMs, style: 'draft' })['RateLimit-Policy'];
    assert.equal(policy(5, 100), '"p";q=50;w=1', '5 per 100 ms is 50 a second, not 5');
    assert.equal(policy(1, 250), '"p";q=4;w=1');
    assert.equal(policy(3, 1_500), '"p";q=4;w=2', '2 a second: 4 in 2 s, rounded down');
    assert.equal(policy(100, 60_000), '"p";q=100;w=60');
  });

  test('a cost above the limit still gets a Retry-After: when the quota is full again', () => {
    const tooBig: RateLimitResult = {
      allowed: false,
      limit: 5,
      remaining: 3,
      resetMs: 4_200,
      retryAfterMs: Infinity,
    };
    assert.equal(rateLimitHeaders(tooBig, { cost: 6 })['Retry-After'], '5');
    assert.equal(
      rateLimitHeaders({ ...tooBig, resetMs: 0 }, { cost: 6, windowMs: 10_000 })['Retry-After'],
      '10',
    );
    assert.equal(
      rateLimitHeaders(tooBig, { cost: 5 })['Retry-After'],
      undefined,
      'within the limit: no promise',
    );
  });

  test('two limiters on one response: the tighter legacy fields, a list item per policy, the later Retry-After', () => {
    const headers: Record<string, string> = {};
    setRateLimitHeaders(headers, allowed, { policy: 'per-minute', windowMs: 60_000 });
    setRateLimitHeaders(
      headers,
      { allowed: false, limit: 10, remaining: 0, resetMs: 800, retryAfterMs: 800 },
      { policy: 'per-second', windowMs: 1_000 },
    );
    assert.deepEqual(headers, {
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '1',
      'RateLimit-Policy': '"per-minute";q=100;w=60, "per-second";q=10;w=1',
      RateLimit: '"per-minute";r=42;t=30, "per-second";r=0;t=1',
      'Retry-After': '1',
    });
    // A looser limiter after it changes no legacy field; one policy written again replaces its own item.
    setRateLimitHeaders(headers, { ...allowed, remaining: 41 }, { policy: 'per-minute', windowMs: 60_000 });
    assert.equal(headers['RateLimit-Remaining'], '0');
    assert.equal(headers.RateLimit, '"per-minute";r=41;t=30, "per-second";r=0;t=1');
  });

  test('combines with fields spelt in another case, and keeps the later of two Retry-Afters', () => {
    const combined = combineRateLimitHeaders(
      { 'Retry-After': '30', RateLimit: '"a, b";r=1;t=30' },
      { 'Retry-After': '2', RateLimit: '"c";r=0;t=2' },
    );
    assert.equal(combined['Retry-After'], '30');
    assert.equal(combined.RateLimit, '"a, b";r=1;t=30, "c";r=0;t=2', 'a comma inside a name splits nothing');
    const plain: Record<string, string> = { 'ratelimit-remaining': '0', 'ratelimit-limit': '1' };
    setRateLimitHeaders(plain, allowed, { style: 'legacy' });
    assert.deepEqual(plain, { 'RateLimit-Limit': '1', 'RateLimit-Remaining': '0' });
  });
});

describe('httpRateLimit on a loopback node:http server', () => {
  const clock = new VirtualClock();
  const perTenant = fixedWindow({ limit: 2, windowMs: 60_000, clock, name: 'tenant-api' });
  const guard = httpRateLimit({ limiter: perTenant, key: (request) => String(request.headers['x-tenant']) });
  const oneAtATime = concurrencyLimit({ maxInFlight: 1, clock, name: 'uploads' });
  const uploadGuard = httpRateLimit({ limiter: oneAtATime, key: () => 'all' });
  const releaseUpload: (() => void)[] = [];
  // Two limiters on one route: a burst of 10 a second (a sub-second window) within 2 a minute per tenant.
  const burst = httpRateLimit({
    limiter: fixedWindow({ limit: 1, windowMs: 100, clock, name: 'burst' }),
    key: (request) => String(request.headers['x-tenant']),
  });
  const bulk = httpRateLimit({
    limiter: fixedWindow({ limit: 5, windowMs: 10_000, clock, name: 'bulk' }),
    key: () => 'all',
    cost: (request) => Number(request.headers['x-cost']),
  });
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer(async (request, response) => {
      const upload = request.url?.startsWith('/upload') === true;
      const admitted =
        request.url === '/both'
          ? (await guard(request, response)) && (await burst(request, response))
          : request.url === '/bulk'
            ? await bulk(request, response)
            : await (upload ? uploadGuard : guard)(request, response);
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

  test('two limiters on one response write one combined set of fields', async () => {
    const answer = await get('/both', 'initech');
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('ratelimit-policy'), '"tenant-api";q=2;w=60, "burst";q=10;w=1');
    assert.match(answer.headers.get('ratelimit') ?? '', /^"tenant-api";r=1;t=\d+, "burst";r=0;t=1$/);
    assert.equal(answer.headers.get('ratelimit-remaining'), '0', 'the tighter of the two');
    assert.equal(answer.headers.get('ratelimit-limit'), '1');
    const refused = await get('/both', 'initech');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(refused.headers.get('ratelimit') ?? '', /"tenant-api";r=0;t=\d+, "burst";r=0;t=1$/);
  });

  test('a request costing more than the limit: 429 with Retry-After, and a body saying it never passes', async () => {
    const tooBig = await fetch(`${base}/bulk`, {
      headers: { 'x-cost': '6' },
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(tooBig.status, 429);
    assert.equal(tooBig.headers.get('retry-after'), '10', 'the window: the quota is full already');
    assert.match(await tooBig.text(), /takes 6 permits, more than the limit of 5; it can never be allowed/);
    const fits = await fetch(`${base}/bulk`, {
      headers: { 'x-cost': '5' },
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(fits.status, 200);
  });
});
