import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { type GatewayEvent, type GatewayServer, startGateway } from './index.js';
import { call, deadUrl, echo, startUpstream, type TestUpstream } from './upstream.test-support.js';

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

describe('gateway balancing and canaries', () => {
  let a: TestUpstream;
  let b: TestUpstream;
  let c: TestUpstream;
  let gateway: GatewayServer;

  before(async () => {
    [a, b, c] = await Promise.all([startUpstream('a'), startUpstream('b'), startUpstream('c')]);
    gateway = await startGateway({
      config: {
        upstreams: {
          weighted: { targets: [{ url: a.url, weight: 3 }, b.url] },
          least: { targets: [a.url, b.url], balance: 'least-requests' },
          hashed: { targets: [a.url, b.url, c.url], balance: { hash: { header: 'x-user' } } },
          stable: { targets: [a.url] },
          canary: { targets: [b.url] },
        },
        routes: [
          { match: { prefix: '/weighted' }, upstream: 'weighted' },
          { match: { prefix: '/least' }, upstream: 'least' },
          { match: { prefix: '/hashed' }, upstream: 'hashed' },
          {
            match: { prefix: '/split' },
            split: [
              { upstream: 'stable', weight: 90 },
              { upstream: 'canary', weight: 10 },
            ],
          },
          {
            match: { prefix: '/sticky' },
            split: [
              { upstream: 'stable', weight: 50 },
              { upstream: 'canary', weight: 50 },
            ],
            sticky: { cookie: 'session' },
          },
        ],
      },
    });
  });

  after(async () => {
    await gateway.close();
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  async function upstreamsOf(
    path: string,
    n: number,
    headers: (i: number) => Record<string, string> = () => ({}),
  ) {
    const seen: string[] = [];
    for (let i = 0; i < n; i++)
      seen.push(String((await call(gateway.url, path, { headers: headers(i) })).json().upstream));
    return seen;
  }

  it('spreads by weight, exactly over each cycle of the total weight', async () => {
    const seen = await upstreamsOf('/weighted', 400);
    assert.deepEqual(countBy(seen), { a: 300, b: 100 });
    // Smooth: never more than three a's in a row.
    assert.ok(!seen.join('').includes('aaaa'));
  });

  it('splits a canary 90/10 within 3 % over 1,000 requests', async () => {
    const counts = countBy(await upstreamsOf('/split', 1000));
    assert.ok(Math.abs((counts.b ?? 0) - 100) <= 30, JSON.stringify(counts));
    assert.equal((counts.a ?? 0) + (counts.b ?? 0), 1000);
  });

  it('keeps a client on one arm of a sticky split, and spreads clients over both', async () => {
    const arms = new Set<string>();
    for (let user = 0; user < 40; user++) {
      const seen = await upstreamsOf('/sticky', 5, () => ({ cookie: `session=user-${user}` }));
      assert.equal(new Set(seen).size, 1, `user-${user} moved: ${seen}`);
      arms.add(seen[0] as string);
    }
    assert.deepEqual([...arms].sort(), ['a', 'b']);
  });

  it('hashes a key to one target and spreads keys over all', async () => {
    const owners = new Map<string, string>();
    for (let user = 0; user < 60; user++) {
      const seen = await upstreamsOf('/hashed', 3, () => ({ 'x-user': `u${user}` }));
      assert.equal(new Set(seen).size, 1);
      owners.set(`u${user}`, seen[0] as string);
    }
    const counts = countBy([...owners.values()]);
    assert.deepEqual(Object.keys(counts).sort(), ['a', 'b', 'c']);
    for (const count of Object.values(counts)) assert.ok(count >= 8, JSON.stringify(counts));
  });

  it('sends new requests to the target with fewer in flight', async () => {
    const held: (() => void)[] = [];
    a.answer((_request, response) => held.push(() => response.end('{"upstream":"a"}')));
    try {
      // Two requests hang on a; with a busy, least-requests prefers b for the next ones.
      const hanging = [call(gateway.url, '/least/1'), call(gateway.url, '/least/2')];
      await waitUntil(() => held.length + b.seen.filter((s) => s.url.startsWith('/least')).length === 2);
      const seen = await upstreamsOf('/least', 20);
      assert.ok(seen.filter((u) => u === 'b').length >= 18, JSON.stringify(countBy(seen)));
      for (const release of held.splice(0)) release();
      a.answer(echo('a'));
      for (const release of held.splice(0)) release();
      await Promise.all(hanging);
    } finally {
      for (const release of held) release();
      a.answer(echo('a'));
    }
  });
});

describe('gateway retries, ejection and health checks', () => {
  it('retries a bodiless request on another target after a connection failure; never a request with a body', async () => {
    const live = await startUpstream('live');
    const gateway = await startGateway({
      config: {
        upstreams: { pool: { targets: [await deadUrl(), live.url], ejection: { maxEjectedPercent: 0 } } },
        routes: [{ upstream: 'pool', retry: { attempts: 2 } }],
      },
    });
    const attempts: number[] = [];
    gateway.gateway.events.on((event) => {
      if (event.type === 'request') attempts.push(event.attempts);
    });
    try {
      for (let i = 0; i < 4; i++) assert.equal((await call(gateway.url, `/get/${i}`)).status, 200);
      assert.deepEqual(attempts.sort(), [1, 1, 2, 2]);
      // Round robin sends every other request to the dead target first: a POST there is not retried.
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++)
        statuses.push((await call(gateway.url, '/post', { method: 'POST', body: 'x' })).status);
      assert.deepEqual(statuses.sort(), [200, 502]);
    } finally {
      await gateway.close();
      await live.close();
    }
  });

  it('retries a status in retry.on, and stops at the retry budget', async () => {
    const flaky = await startUpstream('flaky');
    flaky.answer((_request, response) => response.writeHead(503).end('busy'));
    const clock = new VirtualClock();
    const gateway = await startGateway({
      config: {
        upstreams: { pool: { targets: [flaky.url], ejection: { maxEjectedPercent: 0 } } },
        routes: [{ upstream: 'pool', retry: { attempts: 3 } }],
        retryBudget: { ratio: 0.5, minPerSecond: 0 },
      },
      clock,
    });
    try {
      // 10 requests may add 5 retries: the first requests get theirs (2 each), the rest none.
      for (let i = 0; i < 10; i++) assert.equal((await call(gateway.url, '/x')).status, 503);
      assert.equal(flaky.seen.length, 10 + 5);
      // Ten seconds on, the window is empty again.
      await clock.advance(10_000);
      assert.equal((await call(gateway.url, '/x')).status, 503);
      assert.equal(flaky.seen.length, 15 + 1);
    } finally {
      await gateway.close();
      await flaky.close();
    }
  });

  it('ejects a target after consecutive failures, for longer each time, and takes it back after', async () => {
    const [good, bad] = await Promise.all([startUpstream('good'), startUpstream('bad')]);
    bad.answer((_request, response) => response.writeHead(500).end());
    const clock = new VirtualClock();
    const gateway = await startGateway({
      config: {
        upstreams: {
          pool: {
            targets: [good.url, bad.url],
            ejection: { consecutiveFailures: 3, baseMs: 1_000, maxMs: 1_500 },
          },
        },
        routes: [{ upstream: 'pool' }],
      },
      clock,
    });
    const events: GatewayEvent[] = [];
    gateway.gateway.events.on((event) => {
      if (event.type !== 'request') events.push(event);
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await call(gateway.url, '/x')).status);
      // Round robin: bad answers 500 three times, then is ejected and good takes every request.
      assert.deepEqual(statuses, [200, 500, 200, 500, 200, 500, 200, 200, 200, 200]);
      assert.deepEqual(
        events.map((e) => [e.type, 'durationMs' in e ? e.durationMs : undefined]),
        [['target-ejected', 1_000]],
      );
      await clock.advance(1_000);
      bad.answer(echo('bad'));
      const back = new Set<string>();
      for (let i = 0; i < 4; i++) back.add(String((await call(gateway.url, '/x')).json().upstream));
      assert.deepEqual([...back].sort(), ['bad', 'good']);
      assert.equal(events.at(-1)?.type, 'target-restored');
      // Failing again: the second ejection lasts base × 2, capped at maxMs.
      bad.answer((_request, response) => response.writeHead(502).end());
      for (let i = 0; i < 6; i++) await call(gateway.url, '/x');
      const ejected = events.filter((e) => e.type === 'target-ejected');
      assert.equal(ejected.length, 2);
      assert.equal(
        'durationMs' in (ejected[1] as GatewayEvent) ? (ejected[1] as { durationMs: number }).durationMs : 0,
        1_500,
      );
    } finally {
      await gateway.close();
      await Promise.all([good.close(), bad.close()]);
    }
  });

  it('takes a target out after failed health probes and back after passing ones', async () => {
    const [one, two] = await Promise.all([startUpstream('one'), startUpstream('two')]);
    let twoHealthy = true;
    two.answer((request, response, body) => {
      if (request.url === '/healthz') response.writeHead(twoHealthy ? 200 : 503).end();
      else echo('two')(request, response, body);
    });
    const clock = new VirtualClock();
    const gateway = await startGateway({
      config: {
        upstreams: {
          pool: {
            targets: [one.url, two.url],
            healthCheck: { path: '/healthz', intervalMs: 1_000, unhealthyThreshold: 2, healthyThreshold: 2 },
          },
        },
        routes: [{ upstream: 'pool' }],
      },
      clock,
    });
    const health: string[] = [];
    gateway.gateway.events.on((event) => {
      if (event.type === 'target-unhealthy' || event.type === 'target-healthy')
        health.push(`${event.type} ${event.target === two.url ? 'two' : 'one'}`);
    });
    const probesOfTwo = () => two.seen.filter((s) => s.url === '/healthz').length;
    // A round is over when both targets' answers are handled: each then sets the timer of its next probe.
    const roundDone = () => clock.pendingTimers === 2;
    async function probeRound(expected: number) {
      await clock.advance(1_000);
      await waitUntil(roundDone, `probe ${expected} of each target handled`);
      assert.equal(probesOfTwo(), expected);
    }
    try {
      await waitUntil(roundDone, 'the first probes, at start, handled');
      twoHealthy = false;
      await probeRound(2);
      assert.deepEqual(health, []);
      await probeRound(3);
      assert.deepEqual(health, ['target-unhealthy two']);
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) seen.add(String((await call(gateway.url, '/x')).json().upstream));
      assert.deepEqual([...seen], ['one']);
      twoHealthy = true;
      await probeRound(4);
      assert.equal(health.length, 1);
      await probeRound(5);
      assert.deepEqual(health, ['target-unhealthy two', 'target-healthy two']);
    } finally {
      await gateway.close();
      await Promise.all([one.close(), two.close()]);
    }
  });
});
