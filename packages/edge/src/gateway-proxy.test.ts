import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { request as undiciRequest } from 'undici';
import { type GatewayServer, startGateway } from './index.js';
import {
  call,
  deadUrl,
  echo,
  rawExchange,
  startUpstream,
  type TestUpstream,
} from './upstream.test-support.js';

describe('gateway proxying', () => {
  let app: TestUpstream;
  let gateway: GatewayServer;
  const clock = new VirtualClock();

  before(async () => {
    app = await startUpstream('app');
    gateway = await startGateway({
      config: {
        upstreams: { app: { targets: [app.url] } },
        routes: [
          { name: 'kept-host', match: { prefix: '/kept' }, upstream: 'app', preserveHost: true },
          { name: 'slow', match: { prefix: '/slow' }, upstream: 'app', timeoutMs: 150 },
          { name: 'all', upstream: 'app' },
        ],
      },
      clock,
    });
  });

  after(async () => {
    await gateway.close();
    await app.close();
  });

  it('forwards end-to-end headers, drops hop-by-hop ones and adds X-Forwarded-* and a request id', async () => {
    // Raw bytes: HTTP clients refuse to send a Connection header that lists other headers.
    const raw = await rawExchange(
      gateway.url,
      'GET /h HTTP/1.1\r\nHost: shop.example.com\r\nX-Custom: kept\r\nConnection: close, x-secret\r\n' +
        'X-Secret: dropped, listed in Connection\r\nTE: trailers\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n',
    );
    const answer = {
      status: Number(raw.slice(9, 12)),
      requestId: /\r\nx-request-id: ([^\r]+)/i.exec(raw)?.[1],
    };
    assert.equal(answer.status, 200);
    const seen = app.seen.at(-1);
    assert.ok(seen);
    assert.equal(seen.headers['x-custom'], 'kept');
    assert.equal(seen.headers['x-secret'], undefined);
    assert.equal(seen.headers.te, undefined);
    assert.equal(seen.headers.host, new URL(app.url).host);
    assert.equal(seen.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1');
    assert.equal(seen.headers['x-forwarded-proto'], 'http');
    assert.equal(seen.headers['x-forwarded-host'], 'shop.example.com');
    const id = seen.headers['x-request-id'];
    assert.match(String(id), /^[0-9a-f-]{36}$/);
    assert.equal(answer.requestId, id);
  });

  it('passes repeated response headers through, each Set-Cookie on its own', async () => {
    app.answer((_request, response) => {
      response.setHeader('set-cookie', ['a=1; HttpOnly', 'b=2; Secure']);
      response.end('ok');
    });
    try {
      const answer = await call(gateway.url, '/cookies');
      assert.deepEqual(answer.headers['set-cookie'], ['a=1; HttpOnly', 'b=2; Secure']);
    } finally {
      app.answer(echo('app'));
    }
  });

  it('keeps a sane client request id and replaces one that is not', async () => {
    await call(gateway.url, '/h', { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(app.seen.at(-1)?.headers['x-request-id'], 'abc-123');
    await call(gateway.url, '/h', { headers: { 'x-request-id': 'bad id\twith spaces' } });
    assert.notEqual(app.seen.at(-1)?.headers['x-request-id'], 'bad id\twith spaces');
  });

  it('forwards the client Host when the route preserves it', async () => {
    await call(gateway.url, '/kept', { headers: { host: 'shop.example.com' } });
    assert.equal(app.seen.at(-1)?.headers.host, 'shop.example.com');
  });

  it('streams a chunked upload to the upstream and its answer back', async () => {
    const size = 1024 * 1024;
    async function* chunks() {
      for (let i = 0; i < 16; i++) yield Buffer.alloc(size / 16, 97 + i);
    }
    const response = await undiciRequest(`${gateway.url}/upload`, {
      method: 'PUT',
      body: Readable.from(chunks()),
    });
    const answer = JSON.parse(await response.body.text()) as { body: string; method: string };
    assert.equal(response.statusCode, 200);
    assert.equal(answer.method, 'PUT');
    assert.equal(answer.body.length, size);
    assert.equal(answer.body.at(-1), String.fromCharCode(97 + 15));
  });

  it('passes a server-sent event stream through as it is written, not at its end', async () => {
    let send: ((text: string) => void) | undefined;
    let finish: (() => void) | undefined;
    app.answer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.flushHeaders();
      send = (text) => response.write(`data: ${text}\n\n`);
      finish = () => response.end();
    });
    try {
      const response = await undiciRequest(`${gateway.url}/events`);
      assert.equal(response.headers['content-type'], 'text/event-stream');
      const reader = response.body[Symbol.asyncIterator]();
      send?.('one');
      assert.equal(String((await reader.next()).value), 'data: one\n\n');
      send?.('two');
      assert.equal(String((await reader.next()).value), 'data: two\n\n');
      finish?.();
      assert.equal((await reader.next()).done, true);
    } finally {
      app.answer(echo('app'));
    }
  });

  it('answers 504 when the upstream sends no headers within the route timeout', async () => {
    const held: (() => void)[] = [];
    app.answer((_request, response) => held.push(() => response.end('late')));
    try {
      const logged: number[] = [];
      const stop = gateway.gateway.events.on((event) => {
        if (event.type === 'request') logged.push(event.status);
      });
      const pending = call(gateway.url, '/slow');
      await waitUntil(() => held.length === 1, 'the upstream holds the request');
      await clock.advance(149);
      assert.deepEqual(logged, []);
      await clock.advance(1);
      assert.deepEqual(logged, [504]);
      stop();
      const answer = await pending;
      assert.equal(answer.status, 504);
      assert.equal(answer.json().title, 'Gateway Timeout');
    } finally {
      for (const release of held) release();
      app.answer(echo('app'));
    }
  });

  it('refuses a request with both Content-Length and Transfer-Encoding, smuggling nothing', async () => {
    const before = app.seen.length;
    const raw = await rawExchange(
      gateway.url,
      'POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    assert.match(raw, /^HTTP\/1\.1 400/);
    assert.equal(app.seen.length, before);
    assert.ok(!app.seen.some((seen) => seen.url === '/smuggled'));
  });

  it('refuses header injection through obs-fold and bare CR', async () => {
    for (const request of [
      'GET /a HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n X-Injected: yes\r\n\r\n',
      'GET /a HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-Injected: yes\r\n\r\n',
    ]) {
      const before = app.seen.length;
      const raw = await rawExchange(gateway.url, request);
      assert.match(raw, /^HTTP\/1\.1 400/, JSON.stringify(request));
      assert.equal(app.seen.length, before);
    }
  });

  it('closes the upstream request when the client goes away', async () => {
    let upstreamClosed: Promise<void> | undefined;
    let started: () => void = () => {};
    const hasStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    app.answer((request, response) => {
      upstreamClosed = new Promise((resolve) => response.on('close', () => resolve()));
      response.writeHead(200);
      response.write('partial');
      void request;
      started();
    });
    try {
      const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
      socket.write('GET /stream HTTP/1.1\r\nHost: x\r\n\r\n');
      await hasStarted;
      socket.destroy();
      await upstreamClosed;
    } finally {
      app.answer(echo('app'));
    }
  });
});

describe('gateway and clients that go away', () => {
  it('does not hold a client that went away against the target', async () => {
    const app = await startUpstream('app');
    const held: (() => void)[] = [];
    app.answer((_request, response) => held.push(() => response.end()));
    const gateway = await startGateway({
      config: {
        upstreams: { app: { targets: [app.url], ejection: { consecutiveFailures: 1 } } },
        routes: [{ upstream: 'app' }],
      },
    });
    const events: string[] = [];
    gateway.gateway.events.on((event) =>
      events.push(event.type === 'request' ? `${event.status}` : event.type),
    );
    try {
      const sockets = Array.from({ length: 3 }, () => {
        const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
        socket.on('error', () => {});
        socket.write('GET /wait HTTP/1.1\r\nHost: x\r\n\r\n');
        return socket;
      });
      await waitUntil(() => held.length === 3, 'the upstream holds three requests');
      for (const socket of sockets) socket.destroy();
      await waitUntil(() => events.length === 3, 'three requests logged');
      assert.deepEqual(events, ['499', '499', '499']);
      app.answer(echo('app'));
      assert.equal((await call(gateway.url, '/next')).status, 200);
    } finally {
      for (const release of held) release();
      await gateway.close();
      await app.close();
    }
  });
});

describe('gateway answers for unreachable upstreams', () => {
  it('answers 502 when no connection can be made, and 503 when no target is available', async () => {
    const gateway = await startGateway({
      config: {
        upstreams: {
          gone: { targets: [await deadUrl()], ejection: { consecutiveFailures: 1 } },
        },
        routes: [{ upstream: 'gone' }],
      },
    });
    try {
      const first = await call(gateway.url, '/x');
      assert.equal(first.status, 502);
      assert.equal(first.json().title, 'Bad Gateway');
      // One failure ejected the only target (at least one may always be ejected).
      assert.equal((await call(gateway.url, '/x')).status, 503);
    } finally {
      await gateway.close();
    }
  });
});
