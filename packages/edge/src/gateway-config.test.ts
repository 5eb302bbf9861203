import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitUntil } from '@stratus/testkit';
import {
  type ConfigEvent,
  type GatewayConfig,
  GatewayConfigError,
  type GatewayServer,
  parseGatewayConfig,
  startGateway,
} from './index.js';
import { call, echo, startUpstream, type TestUpstream } from './upstream.test-support.js';

function problemsOf(config: unknown): readonly string[] {
  try {
    parseGatewayConfig(config);
  } catch (error) {
    assert.ok(error instanceof GatewayConfigError);
    return error.problems;
  }
  assert.fail('the config was accepted');
}

describe('gateway config validation', () => {
  it('accepts a minimal config and lists every problem of a bad one by its path', () => {
    assert.deepEqual(parseGatewayConfig({ upstreams: {}, routes: [] }), { upstreams: {}, routes: [] });
    const text = problemsOf({
      upstreams: { a: { targets: ['ftp://x'] } },
      routes: [{ upstream: 'a', match: { prefix: 'no-slash' } }, { upstrem: 'a' }],
    }).join('\n');
    assert.match(text, /\/upstreams\/a\/targets\/0/);
    assert.match(text, /\/routes\/0\/match\/prefix/);
    assert.match(text, /\/routes\/1.*upstrem/s);
  });

  it('checks what the schema cannot: references, exclusive fields, regexes, addresses, names', () => {
    const problems = (routes: unknown[]) =>
      problemsOf({ upstreams: { a: { targets: ['http://127.0.0.1:1'] } }, routes });
    assert.match(problems([{ upstream: 'b' }])[0] ?? '', /no upstream named "b"/);
    assert.match(problems([{}])[0] ?? '', /exactly one of upstream and split/);
    assert.match(
      problems([{ upstream: 'a', match: { prefix: '/a', path: '/b' } }])[0] ?? '',
      /prefix or path/,
    );
    assert.match(problems([{ upstream: 'a', match: { headers: { x: { regex: '(' } } } }])[0] ?? '', /regex/);
    assert.match(problems([{ upstream: 'a', match: { sourceIps: ['10.0.0.0/33'] } }])[0] ?? '', /CIDR/);
    assert.match(problems([{ split: [{ upstream: 'a', weight: 0 }] }])[0] ?? '', /weight/);
    assert.match(
      problems([{ upstream: 'a', match: { path: '/u/:id' }, rewrite: { path: '/x/:other' } }])[0] ?? '',
      /":other" is not a parameter/,
    );
    assert.match(
      problems([
        { upstream: 'a', name: 'x' },
        { upstream: 'a', name: 'x' },
      ])[0] ?? '',
      /names two routes/,
    );
  });
});

describe('gateway reloads', () => {
  let one: TestUpstream;
  let two: TestUpstream;
  let gateway: GatewayServer;
  const configTo = (target: string): GatewayConfig => ({
    upstreams: { main: { targets: [target] } },
    routes: [{ upstream: 'main' }],
  });

  before(async () => {
    [one, two] = await Promise.all([startUpstream('one'), startUpstream('two')]);
    gateway = await startGateway({ config: configTo(one.url) });
  });

  after(async () => {
    await gateway.close();
    await Promise.all([one.close(), two.close()]);
  });

  it('swaps the routes at once and refuses a bad config, keeping the last good one', async () => {
    const events: ConfigEvent[] = [];
    const stop = gateway.gateway.events.on((event) => {
      if (event.type === 'config-applied' || event.type === 'config-rejected') events.push(event);
    });
    gateway.gateway.reload(configTo(two.url), 'test');
    assert.equal((await call(gateway.url, '/')).json().upstream, 'two');
    assert.throws(
      () => gateway.gateway.reload({ upstreams: {}, routes: [{ upstream: 'main' }] }),
      GatewayConfigError,
    );
    assert.equal((await call(gateway.url, '/')).json().upstream, 'two');
    assert.deepEqual(
      events.map((e) => [e.type, e.version]),
      [
        ['config-applied', 2],
        ['config-rejected', 3],
      ],
    );
    gateway.gateway.reload(configTo(one.url));
    assert.equal(gateway.gateway.version, 3);
    stop();
  });

  it('lets a request in flight finish on the config it started with', async () => {
    let release: () => void = () => {};
    one.answer((_request, response) => {
      release = () => response.end('{"upstream":"one, late"}');
    });
    const pending = call(gateway.url, '/slow');
    await waitUntil(() => one.seen.at(-1)?.url === '/slow');
    gateway.gateway.reload(configTo(two.url));
    assert.equal((await call(gateway.url, '/')).json().upstream, 'two');
    release();
    const answer = await pending;
    one.answer(echo('one'));
    assert.equal(answer.status, 200);
    assert.equal(answer.json().upstream, 'one, late');
    gateway.gateway.reload(configTo(one.url));
  });

  it('keeps an unchanged upstream, with its targets standing, across a reload', () => {
    const before = gateway.gateway.upstreams.get('main');
    gateway.gateway.reload({ ...configTo(one.url), routes: [{ name: 'renamed', upstream: 'main' }] });
    assert.equal(gateway.gateway.upstreams.get('main'), before);
    gateway.gateway.reload({
      upstreams: { main: { targets: [one.url], connections: 4 } },
      routes: [{ upstream: 'main' }],
    });
    assert.notEqual(gateway.gateway.upstreams.get('main'), before);
  });

  it('loses no request over ten reloads under load', async () => {
    let failures = 0;
    let done = 0;
    let running = true;
    const client = async () => {
      while (running) {
        const answer = await call(gateway.url, '/load');
        if (answer.status !== 200) failures += 1;
        done += 1;
      }
    };
    const clients = Array.from({ length: 8 }, client);
    for (let i = 0; i < 10; i++) {
      const target = done;
      await waitUntil(() => done >= target + 50, 'fifty more requests answered');
      gateway.gateway.reload(configTo(i % 2 === 0 ? two.url : one.url));
    }
    running = false;
    await Promise.all(clients);
    assert.equal(failures, 0);
    assert.ok(done >= 500);
  });
});

describe('gateway config file', () => {
  it('applies the file when it changes, also when replaced by a rename, and keeps the last good one', async () => {
    const [one, two] = await Promise.all([startUpstream('one'), startUpstream('two')]);
    const dir = mkdtempSync(join(tmpdir(), 'stratus-gateway-'));
    const file = join(dir, 'gateway.json');
    const write = (value: unknown, path = file) =>
      writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    write({ upstreams: { main: { targets: [one.url] } }, routes: [{ upstream: 'main' }] });
    const gateway = await startGateway({ configFile: file });
    const events: ConfigEvent[] = [];
    gateway.gateway.events.on((event) => {
      if (event.type === 'config-applied' || event.type === 'config-rejected') events.push(event);
    });
    try {
      assert.equal((await call(gateway.url, '/')).json().upstream, 'one');
      write({ upstreams: { main: { targets: [two.url] } }, routes: [{ upstream: 'main' }] });
      await waitUntil(() => events.length === 1, 'the change applied', 10_000);
      assert.equal(events[0]?.type, 'config-applied');
      assert.equal((await call(gateway.url, '/')).json().upstream, 'two');

      write('{ "upstreams": ');
      await waitUntil(() => events.length === 2, 'the broken file refused', 10_000);
      assert.equal(events[1]?.type, 'config-rejected');
      assert.match(events[1]?.problems?.[0] ?? '', /not JSON/);
      assert.equal((await call(gateway.url, '/')).json().upstream, 'two');

      write({ upstreams: { main: { targets: [one.url] } }, routes: [{ upstream: 'main' }] }, `${file}.tmp`);
      renameSync(`${file}.tmp`, file);
      await waitUntil(
        () => events.some((e, i) => i >= 2 && e.type === 'config-applied'),
        'the renamed file',
        10_000,
      );
      assert.equal((await call(gateway.url, '/')).json().upstream, 'one');
      assert.equal(await gateway.watcher?.reload(), true);
    } finally {
      await gateway.close();
      await Promise.all([one.close(), two.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
