// Gateway Routing: one endpoint in front of three services. Routes match on path and header, a canary takes 10 % of
// the orders traffic, and a reload moves all of it to the new version without dropping a request.
// Prints:
//   GET /users/7 -> users saw /people/7
//   GET /orders/1 with x-beta -> orders-v2
//   100 orders: 90 on v1, 10 on v2
//   after the reload: 100 on v2
//   GET /nowhere -> 404 application/problem+json
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway } from '@stratus/edge';

/** A service that answers with its name and the path it was asked for. */
async function service(name: string): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ service: name, path: request.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const [users, ordersV1, ordersV2] = await Promise.all([
  service('users'),
  service('orders-v1'),
  service('orders-v2'),
]);

const config = (canaryWeight: number) => ({
  upstreams: {
    users: { targets: [users.url] },
    'orders-v1': { targets: [ordersV1.url] },
    'orders-v2': { targets: [ordersV2.url], healthCheck: { path: '/health' } },
  },
  routes: [
    { name: 'users', match: { prefix: '/users' }, upstream: 'users', rewrite: { prefix: '/people' } },
    {
      name: 'orders-beta',
      match: { prefix: '/orders', headers: { 'x-beta': { present: true } } },
      upstream: 'orders-v2',
    },
    {
      name: 'orders',
      match: { prefix: '/orders' },
      split: [
        { upstream: 'orders-v1', weight: 100 - canaryWeight },
        { upstream: 'orders-v2', weight: canaryWeight },
      ],
    },
  ],
});

const gateway = await startGateway({ config: config(10) });
const get = async (path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}${path}`, { headers });
  const body = (await response.json()) as { service: string; path: string };
  return { status: response.status, type: response.headers.get('content-type'), body };
};

console.log(`GET /users/7 -> users saw ${(await get('/users/7')).body.path}`);
console.log(`GET /orders/1 with x-beta -> ${(await get('/orders/1', { 'x-beta': '1' })).body.service}`);

async function spread(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < 100; i++) {
    const { service: name } = (await get(`/orders/${i}`)).body;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
const before = await spread();
console.log(`100 orders: ${before['orders-v1']} on v1, ${before['orders-v2']} on v2`);

gateway.gateway.reload(config(100)); // the rollout; config(0) would be the rollback
console.log(`after the reload: ${(await spread())['orders-v2']} on v2`);

const missing = await get('/nowhere');
console.log(`GET /nowhere -> ${missing.status} ${missing.type}`);

await gateway.close();
for (const { server } of [users, ordersV1, ordersV2]) server.close();
