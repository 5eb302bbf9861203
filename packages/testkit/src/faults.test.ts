import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import {
  call,
  type FaultyUpstream,
  faultyFunction,
  httpError,
  networkError,
  reply,
  startFaultyUpstream,
} from './faults.js';
import { flushMicrotasks, VirtualClock, waitUntil } from './virtual-clock.js';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET with node:http so socket errors keep their Node codes. A fresh connection per request. */
function get(url: string, options: { path?: string; signal?: AbortSignal } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${options.path ?? '/'}`, {
      agent: false,
      signal: options.signal,
      timeout: 5_000,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('test client timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** A deterministic random source: returns the given values in turn. */
function randomFrom(values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

describe('startFaultyUpstream', () => {
  const upstreams: FaultyUpstream[] = [];
  const start = async (...args: Parameters<typeof startFaultyUpstream>) => {
    const upstream = await startFaultyUpstream(...args);
    upstreams.push(upstream);
    return upstream;
  };
  after(() => Promise.all(upstreams.map((u) => u.close())));

  it('answers 200 by default and counts requests per outcome', async () => {
    const upstream = await start();
    assert.match(upstream.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await get(upstream.url);
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body), { status: 200, message: 'OK' });
    upstream.setScript(reply.ok('plain'));
    assert.equal((await get(upstream.url)).body, 'plain');
    upstream.setScript(reply.ok({ id: 7 }));
    const json = await get(upstream.url);
    assert.equal(json.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(json.body), { id: 7 });
    assert.equal(upstream.requests, 3);
    assert.deepEqual(upstream.counts, { '200': 3 });
  });

  it('fails with 500, 503 and 429 with Retry-After as seconds or an HTTP date', async () => {
    const at = new Date(Date.UTC(2026, 0, 1, 12, 0, 30));
    const upstream = await start({
      script: {
        sequence: [
          reply.error(),
          reply.unavailable(2),
          reply.tooManyRequests(at),
          reply.status(429, { retryAfter: '7' }),
        ],
      },
    });
    const replies = [
      await get(upstream.url),
      await get(upstream.url),
      await get(upstream.url),
      await get(upstream.url),
    ];
    assert.deepEqual(
      replies.map((r) => [r.status, r.headers['retry-after']]),
      [
        [500, undefined],
        [503, '2'],
        [429, 'Thu, 01 Jan 2026 12:00:30 GMT'],
        [429, '7'],
      ],
    );
    assert.equal(Date.parse(replies[2]?.headers['retry-after'] as string), at.getTime());
    // After the sequence: the default, 200.
    assert.equal((await get(upstream.url)).status, 200);
    assert.deepEqual(upstream.counts, { '500': 1, '503': 1, '429': 2, '200': 1 });
  });

  it('follows repeating, random and per-request scripts, restarting when the script changes', async () => {
    const upstream = await start({ script: { repeat: [reply.ok(), reply.unavailable()] } });
    const statuses = async (n: number) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await get(upstream.url)).status);
      return out;
    };
    assert.deepEqual(await statuses(5), [200, 503, 200, 503, 200]);
    upstream.setScript({
      mix: [
        [3, reply.ok()],
        [1, reply.error(502)],
      ],
      random: randomFrom([0.1, 0.8, 0.74, 0.75, 0.99]),
    });
    assert.deepEqual(await statuses(5), [200, 502, 200, 502, 502]);
    upstream.setScript(({ path, index }) => (path === '/down' ? reply.error(503) : reply.ok(`#${index}`)));
    assert.equal((await get(upstream.url, { path: '/down' })).status, 503);
    assert.equal((await get(upstream.url, { path: '/up' })).body, '#1');
  });

  it('resets the connection: the client sees ECONNRESET', async () => {
    const upstream = await start({ script: { sequence: [reply.reset()] } });
    await assert.rejects(get(upstream.url), { code: 'ECONNRESET' });
    assert.equal((await get(upstream.url)).status, 200);
    assert.deepEqual(upstream.counts, { reset: 1, '200': 1 });
  });

  it('stalls until the client gives up, or until close() resets it', async () => {
    const upstream = await startFaultyUpstream({ script: reply.stall() });
    const controller = new AbortController();
    const first = get(upstream.url, { signal: controller.signal });
    await upstream.waitForRequests(1);
    assert.equal(upstream.pending, 1);
    controller.abort();
    await assert.rejects(first, { name: 'AbortError' });
    const second = get(upstream.url);
    await upstream.waitForRequests(2);
    await upstream.close();
    await assert.rejects(second, { code: 'ECONNRESET' });
    assert.equal(upstream.pending, 0);
  });

  it('answers slowly on its clock', async () => {
    const clock = new VirtualClock();
    const upstream = await start({ clock, script: reply.slow(100, reply.unavailable(1)) });
    let settled = false;
    const pending = get(upstream.url).finally(() => {
      settled = true;
    });
    await upstream.waitForRequests(1);
    assert.equal(clock.pendingTimers, 1);
    await clock.advance(99);
    await flushMicrotasks();
    assert.equal(settled, false);
    await clock.advance(1);
    const res = await pending;
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(upstream.pending, 0);
  });

  it('releases the timer of a slow reply when the client hangs up', async () => {
    const clock = new VirtualClock();
    const upstream = await start({ clock, script: reply.slow(1_000) });
    const controller = new AbortController();
    const pending = get(upstream.url, { signal: controller.signal });
    await upstream.waitForRequests(1);
    controller.abort();
    await assert.rejects(pending);
    // The server learns of the hang-up through I/O.
    await waitUntil(() => clock.pendingTimers === 0, 'the server dropped the delayed reply');
    assert.equal(upstream.pending, 0);
  });

  it('waitForRequests is bounded', async () => {
    const upstream = await start();
    await assert.rejects(
      upstream.waitForRequests(1, 20),
      /timed out after 20 ms waiting for 1 requests \(saw 0\)/,
    );
  });

  it('rejects malformed scripts', async () => {
    await assert.rejects(startFaultyUpstream({ script: { repeat: [] } }), InvalidOptionsError);
    await assert.rejects(
      startFaultyUpstream({ script: { mix: [[-1, reply.ok()]] } }),
      (error: InvalidOptionsError) => error.option === 'script.mix[0][0]',
    );
    await assert.rejects(startFaultyUpstream({ script: { mix: [[0, reply.ok()]] } }), /positive sum/);
    await assert.rejects(
      startFaultyUpstream({ script: { sequence: [reply.ok(), { kind: 'nope' } as never] } }),
      (error: InvalidOptionsError) => error.option === 'script.sequence[1]',
    );
  });
});

describe('realistic errors', () => {
  it('httpError carries status, statusCode and lower-case headers with Retry-After', () => {
    const error = httpError(503, { retryAfter: 3, headers: { 'X-Request-Id': 'r1' } });
    assert.ok(error instanceof Error);
    assert.equal(error.status, 503);
    assert.equal(error.statusCode, 503);
    assert.deepEqual(error.headers, { 'x-request-id': 'r1', 'retry-after': '3' });
    assert.equal(error.message, 'Request failed with status 503 Service Unavailable');
    const dated = httpError(429, { retryAfter: new Date(Date.UTC(2026, 0, 1)) });
    assert.equal(dated.headers['retry-after'], 'Thu, 01 Jan 2026 00:00:00 GMT');
  });

  it('networkError looks like a Node socket error', () => {
    const error = networkError();
    assert.equal(error.message, 'read ECONNRESET');
    assert.equal(error.code, 'ECONNRESET');
    assert.equal(error.syscall, 'read');
    assert.ok(error.errno < 0);
    assert.equal(networkError('ECONNREFUSED', 'connect').message, 'connect ECONNREFUSED');
  });
});

describe('faultyFunction', () => {
  it('returns and throws by script, then says the script ran out', async () => {
    const fn = faultyFunction<number>({
      sequence: [
        call.returns(1),
        call.failsWith(429, { retryAfter: 2 }),
        call.networkError(),
        call.returns(4),
      ],
    });
    assert.equal(await fn(), 1);
    await assert.rejects(fn(), { status: 429, headers: { 'retry-after': '2' } });
    await assert.rejects(fn(), { code: 'ECONNRESET' });
    assert.equal(await fn(), 4);
    await assert.rejects(fn(), /script exhausted \(1 call\(s\) past its end\)/);
    assert.equal(fn.calls, 5);
    assert.deepEqual(fn.counts, { return: 2, throw: 3 });
  });

  it('stalls until its signal aborts, rejecting with the signal reason', async () => {
    const fn = faultyFunction<number>(call.stalls());
    const controller = new AbortController();
    const pending = fn({ signal: controller.signal });
    assert.equal(fn.pending, 1);
    const reason = new Error('gave up');
    controller.abort(reason);
    await assert.rejects(pending, (error) => error === reason);
    assert.equal(fn.pending, 0);
    const already = AbortSignal.abort();
    await assert.rejects(fn({ signal: already }), { name: 'AbortError' });
  });

  it('delays on its clock and honours aborts during the delay', async () => {
    const clock = new VirtualClock();
    const fn = faultyFunction<string>(call.slow(50, call.returns('late')), { clock });
    let value: string | undefined;
    const first = fn().then((v) => {
      value = v;
    });
    await clock.advance(49);
    assert.equal(value, undefined);
    await clock.advance(1);
    await first;
    assert.equal(value, 'late');

    const controller = new AbortController();
    const second = fn({ signal: controller.signal });
    assert.equal(clock.pendingTimers, 1);
    controller.abort();
    await assert.rejects(second, { name: 'AbortError' });
    assert.equal(clock.pendingTimers, 0);
  });

  it('wraps a target: passes through by default, injects faults where the script says', async () => {
    let real = 0;
    const fn = faultyFunction<number>(
      { sequence: [call.networkError('ETIMEDOUT', 'connect'), call.passes()] },
      { target: () => ++real },
    );
    await assert.rejects(fn(), { code: 'ETIMEDOUT', message: 'connect ETIMEDOUT' });
    assert.equal(await fn(), 1);
    assert.equal(await fn(), 2);
    fn.setScript(call.throws(new TypeError('boom')));
    await assert.rejects(fn(), TypeError);
    assert.equal(real, 2);
  });

  it('mixes outcomes with an injected random source', async () => {
    const fn = faultyFunction<string>({
      mix: [
        [0.9, call.returns('ok')],
        [0.1, call.failsWith(500)],
      ],
      random: randomFrom([0.5, 0.95]),
    });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => fn()));
    assert.equal(outcomes.filter((o) => o.status === 'rejected').length, 5);
    assert.deepEqual(fn.counts, { return: 5, throw: 5 });
  });

  it('abortPending releases calls made without a signal', async () => {
    const fn = faultyFunction<number>(call.stalls());
    const calls = [fn(), fn()];
    assert.equal(fn.pending, 2);
    fn.abortPending(new Error('test over'));
    for (const pending of calls) await assert.rejects(pending, /test over/);
    assert.equal(fn.pending, 0);
    await fn.waitForCalls(2);
  });

  it('rejects malformed scripts and options', () => {
    assert.throws(() => faultyFunction({ repeat: [] }), InvalidOptionsError);
    assert.throws(() => faultyFunction(call.returns(1), { target: 5 as never }), InvalidOptionsError);
    assert.throws(() => faultyFunction(42 as never), InvalidOptionsError);
  });
});
