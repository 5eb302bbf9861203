import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkGatewayFile } from './gateway.js';

const bin = fileURLToPath(new URL('../bin/stratus.js', import.meta.url));

async function service(name: string): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => response.end(`${name} ${request.url}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('stratus gateway', () => {
  let dir: string;
  let one: { url: string; server: Server };
  let two: { url: string; server: Server };
  const config = (url: string, route = 'main') => ({
    upstreams: { main: { targets: [url] } },
    routes: [{ name: route, upstream: 'main' }],
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'stratus-cli-gateway-'));
    [one, two] = await Promise.all([service('one'), service('two')]);
  });
  after(() => {
    one.server.close();
    two.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('check: accepts a good file, lists every problem of a bad one, and prints what would change', async () => {
    const good = join(dir, 'good.json');
    const next = join(dir, 'next.json');
    const bad = join(dir, 'bad.json');
    writeFileSync(good, JSON.stringify(config(one.url)));
    writeFileSync(next, JSON.stringify(config(two.url, 'renamed')));
    writeFileSync(bad, JSON.stringify({ upstreams: {}, routes: [{ upstream: 'nope', extra: 1 }] }));
    let out = '';
    const write = (text: string) => {
      out += text;
    };
    assert.equal(await checkGatewayFile([good], write), 0);
    assert.equal(out, `${good}: valid, 1 upstream(s), 1 route(s)\n`);
    out = '';
    assert.equal(await checkGatewayFile([bad], write), 1);
    assert.match(out, /bad\.json: invalid\n {2}\/routes\/0.*extra/);
    out = '';
    assert.equal(await checkGatewayFile([next, '--against', good], write), 0);
    assert.match(
      out,
      /changes from .*good\.json:\n {2}~ upstream main\n {2}\+ route renamed\n {2}- route main\n$/,
    );
  });

  it('serves a config file, applies it again on SIGHUP, and stops on SIGTERM', async () => {
    const file = join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify(config(one.url)));
    const token = 'a-token-for-the-admin-api-of-32-chars+';
    const child = spawn(process.execPath, [bin, 'gateway', file, '--port', '0', '--admin-port', '0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, STRATUS_GATEWAY_ADMIN_TOKEN: token },
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async () => JSON.parse(String((await lines.next()).value)) as Record<string, unknown>;
    try {
      let line = await next();
      while (line.msg !== 'gateway listening') line = await next();
      const url = String(line.url);
      const admin = String(line.admin);
      assert.equal(await (await fetch(`${url}/a`)).text(), 'one /a');
      const access = await next();
      assert.equal(access.msg, 'request');
      assert.equal(access.status, 200);
      assert.equal(access.path, '/a');

      // Written in place; SIGHUP applies it even if the watcher has not yet.
      writeFileSync(file, JSON.stringify(config(two.url)));
      child.kill('SIGHUP');
      do line = await next();
      while (line.msg !== 'config applied');
      assert.equal(await (await fetch(`${url}/b`)).text(), 'two /b');
      const metrics = await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(metrics.status, 200);
      assert.match(
        await metrics.text(),
        /stratus_gateway_requests_total\{route="main",upstream="main",code="200"\} 2/,
      );
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
