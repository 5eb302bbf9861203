import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { routeTable } from './route-table.js';

test('routeTable lists every route and method of a Fastify app from its printed table', async () => {
  const app = Fastify();
  const handler = async () => 'ok';
  app.get('/', handler);
  app.post('/manage/create', handler);
  app.get('/manage/:slug/:accessCode', handler);
  app.post('/manage/:slug/:accessCode/seats/:seatTypeId/delete', handler);
  app.get('/:slug/', handler);
  app.post('/:slug/register', handler);
  app.route({ method: ['PUT', 'DELETE'], url: '/api/orders/:orderId/assignments/:position', handler });
  await app.ready();
  const routes = routeTable(app.printRoutes({ commonPrefix: false }));
  const listed = routes
    .filter((route) => route.method !== 'HEAD')
    .map((route) => `${route.method} ${route.url}`);
  assert.deepEqual(listed.sort(), [
    'DELETE /api/orders/:orderId/assignments/:position',
    'GET /',
    'GET /:slug/',
    'GET /manage/:slug/:accessCode',
    'POST /:slug/register',
    'POST /manage/:slug/:accessCode/seats/:seatTypeId/delete',
    'POST /manage/create',
    'PUT /api/orders/:orderId/assignments/:position',
  ]);
  for (const route of routes) assert.ok(app.hasRoute(route), `${route.method} ${route.url}`);
  await app.close();
});
