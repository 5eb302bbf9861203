import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type GatewayServer, startGateway } from './index.js';
import { call, startUpstream, type TestUpstream } from './upstream.test-support.js';

describe('gateway routing', () => {
  let users: TestUpstream;
  let orders: TestUpstream;
  let admin: TestUpstream;
  let gateway: GatewayServer;

  before(async () => {
    [users, orders, admin] = await Promise.all([
      startUpstream('users'),
      startUpstream('orders'),
      startUpstream('admin'),
    ]);
    gateway = await startGateway({
      config: {
        upstreams: {
          users: { targets: [users.url] },
          orders: { targets: [`${orders.url}/api/v2`] },
          admin: { targets: [admin.url] },
        },
        routes: [
          {
            name: 'local-admin',
            match: { prefix: '/admin', sourceIps: ['127.0.0.0/8', '::1'] },
            upstream: 'admin',
          },
          {
            name: 'by-host',
            match: { host: ['orders.example.com', '*.orders.example.com'] },
            upstream: 'orders',
          },
          {
            name: 'beta-header',
            match: { prefix: '/users', headers: { 'x-beta': { present: true } } },
            upstream: 'admin',
          },
          {
            name: 'by-cookie',
            match: { prefix: '/users', cookies: { tier: ['gold', 'platinum'] } },
            upstream: 'orders',
          },
          {
            name: 'by-query',
            match: { prefix: '/users', query: { v: { regex: '^2(\\.\\d+)?$' } } },
            upstream: 'orders',
          },
          {
            name: 'user-orders',
            match: { path: '/users/:id/orders/:order', methods: ['GET', 'delete'] },
            upstream: 'orders',
            rewrite: { path: '/orders/:order/of/:id' },
          },
          {
            name: 'users',
            match: { prefix: '/users/' },
            upstream: 'users',
            rewrite: { prefix: '/v1/people' },
          },
          {
            name: 'files',
            match: { path: '/files/*rest' },
            upstream: 'users',
            rewrite: { path: '/blobs/*rest' },
          },
        ],
      },
    });
  });

  after(async () => {
    await gateway.close();
    await Promise.all([users.close(), orders.close(), admin.close()]);
  });

  it('rewrites a prefix and keeps the query string', async () => {
    const answer = await call(gateway.url, '/users/42?expand=1');
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json(), {
      upstream: 'users',
      method: 'GET',
      url: '/v1/people/42?expand=1',
      body: '',
    });
  });

  it('matches path parameters, fills a rewrite template and prepends the target URL path', async () => {
    const answer = await call(gateway.url, '/users/7/orders/99', { method: 'DELETE' });
    assert.deepEqual(answer.json(), {
      upstream: 'orders',
      method: 'DELETE',
      url: '/api/v2/orders/99/of/7',
      body: '',
    });
    // A method the route does not list falls through to the next route.
    assert.equal(
      (await call(gateway.url, '/users/7/orders/99', { method: 'POST' })).json().upstream,
      'users',
    );
  });

  it('routes a trailing wildcard with the rest of the path', async () => {
    assert.equal((await call(gateway.url, '/files/a/b/c.txt')).json().url, '/blobs/a/b/c.txt');
  });

  it('routes by host, exact and by wildcard, ignoring case and port', async () => {
    for (const host of ['orders.example.com', 'ORDERS.example.com:8080', 'eu.orders.example.com']) {
      assert.equal((await call(gateway.url, '/x', { headers: { host } })).json().upstream, 'orders', host);
    }
    assert.equal((await call(gateway.url, '/x', { headers: { host: 'xorders.example.com' } })).status, 404);
  });

  it('routes by header presence, cookie value and query regex before the general route', async () => {
    assert.equal(
      (await call(gateway.url, '/users/1', { headers: { 'x-beta': '' } })).json().upstream,
      'admin',
    );
    const gold = await call(gateway.url, '/users/1', { headers: { cookie: 'a=b; tier=gold' } });
    assert.equal(gold.json().upstream, 'orders');
    assert.equal(
      (await call(gateway.url, '/users/1', { headers: { cookie: 'tier=tin' } })).json().upstream,
      'users',
    );
    assert.equal((await call(gateway.url, '/users/1?v=2.1')).json().upstream, 'orders');
    assert.equal((await call(gateway.url, '/users/1?v=3')).json().upstream, 'users');
  });

  it('routes by client address', async () => {
    assert.equal((await call(gateway.url, '/admin/stats')).json().upstream, 'admin');
  });

  it('answers 404 as problem details when no route matches, without calling any upstream', async () => {
    const before = users.seen.length + orders.seen.length + admin.seen.length;
    const answer = await call(gateway.url, '/nothing/here');
    assert.equal(answer.status, 404);
    assert.equal(answer.headers['content-type'], 'application/problem+json');
    const problem = answer.json();
    assert.equal(problem.status, 404);
    assert.equal(problem.requestId, answer.headers['x-request-id']);
    assert.equal(users.seen.length + orders.seen.length + admin.seen.length, before);
  });

  it('resolves dot segments before matching, so a prefix cannot be escaped', async () => {
    // /users/../admin is /admin: the admin route, not users' prefix rewrite.
    const answer = await call(gateway.url, '/users/%2e%2e/admin/x');
    assert.equal(answer.json().upstream, 'admin');
    assert.equal(answer.json().url, '/admin/x');
  });

  it('refuses a path that hides a separator in an encoding', async () => {
    for (const path of ['/users/a%2F..%2F..%2Fadmin', '/users/a%5cb', '/users/a%00b']) {
      assert.equal((await call(gateway.url, path)).status, 400, path);
    }
  });
});
