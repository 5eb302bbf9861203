/**
 * An order answers only to its token (attack review, finding 6): on the API as a bearer token, on the site as a
 * cookie; and the registrant of a confirmed order (whose e-mail finds the order) can be changed by the owner only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance, InjectOptions } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { apiRoutes } from './api.js';
import { type ApiOperation, operations } from './api-operations.js';
import { InjectBrowser, placeSiteOrder, REGISTRANT_FIELDS } from './fixtures/browser.js';
import { startWebApp, type WebApp } from './fixtures/web-app.js';
import { orderToken } from './order-token.js';
import { pageRoutes } from './pages/index.js';

const SECRET = 'a secret for the order access tests';
let web: WebApp;
let system: ConferenceSystem;
let app: FastifyInstance;

before(async () => {
  web = await startWebApp({ RATE_LIMITS: 'off' }, async (instance, started) => {
    await instance.register(apiRoutes, { system: started, ownerTokenSecret: SECRET });
    await instance.register(pageRoutes, { system: started, ownerTokenSecret: SECRET });
  });
  ({ system, app } = web);
});

after(() => web?.close());

async function call(
  method: InjectOptions['method'],
  url: string,
  options: { body?: object; token?: string } = {},
) {
  const response = await app.inject({
    method,
    url,
    headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
    ...(options.body === undefined ? {} : { payload: options.body }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  const body: any = response.body === '' ? undefined : JSON.parse(response.body);
  return { status: response.statusCode, body };
}

let slugs = 0;

/** A published conference with one seat type of `price`; answers its ids and an owner token. */
async function openConference(price: number) {
  const slug = `access_${++slugs}_${Math.floor(Math.random() * 1e6)}`;
  const created = await call('POST', '/api/conferences', {
    body: {
      slug,
      name: 'Access Summit',
      description: 'Tokens',
      location: 'Oslo',
      startDate: '2027-09-01',
      endDate: '2027-09-02',
      ownerName: 'Olga',
      ownerEmail: 'olga@example.com',
    },
  });
  assert.equal(created.status, 201);
  const login = await call('POST', '/api/owner/login', {
    body: { email: 'olga@example.com', accessCode: created.body.accessCode },
  });
  const { token } = login.body;
  const id: string = created.body.id;
  const seat = await call('POST', `/api/conferences/${id}/seat-types`, {
    token,
    body: { name: 'General', description: 'Day', quantity: 50, price },
  });
  assert.equal((await call('POST', `/api/conferences/${id}/publish`, { token })).status, 204);
  await system.waitFor(
    async () => ((await system.queries.conference(id))?.seatTypes[0]?.available ? true : undefined),
    10_000,
  );
  return { id, slug, token, seatTypeId: seat.body.id as string };
}

async function placeOrder(slug: string, seatTypeId: string) {
  const placed = await call('POST', `/api/public/conferences/${slug}/orders`, {
    body: { seats: [{ seatTypeId, quantity: 1 }] },
  });
  assert.equal(placed.status, 202);
  return placed.body as { orderId: string; orderToken: string };
}

describe('the API', () => {
  test('every order route answers 404 without the order token, or with a wrong one', async () => {
    const conference = await openConference(10);
    const mine = await placeOrder(conference.slug, conference.seatTypeId);
    const theirs = await placeOrder(conference.slug, conference.seatTypeId);
    assert.equal(mine.orderToken, orderToken(mine.orderId, Buffer.from(SECRET)));
    const routes = Object.values(operations as Record<string, ApiOperation>).filter(
      (operation) => operation.order,
    );
    assert.deepEqual(routes.map((operation) => `${operation.method} ${operation.path}`).sort(), [
      'DELETE /api/orders/{orderId}/assignments/{position}',
      'GET /api/orders/{orderId}',
      'GET /api/orders/{orderId}/assignments',
      'POST /api/orders/{orderId}/payment',
      'PUT /api/orders/{orderId}/assignments/{position}',
      'PUT /api/orders/{orderId}/registrant',
      'PUT /api/orders/{orderId}/seats',
    ]);
    const bodies: Record<string, object> = {
      'PUT /api/orders/{orderId}/registrant': {
        firstName: 'Eve',
        lastName: 'Evil',
        email: 'eve@example.com',
      },
      'PUT /api/orders/{orderId}/seats': { seats: [{ seatTypeId: conference.seatTypeId, quantity: 20 }] },
      'PUT /api/orders/{orderId}/assignments/{position}': {
        firstName: 'E',
        lastName: 'E',
        email: 'e@example.com',
      },
    };
    for (const operation of routes) {
      const url = operation.path.replace('{orderId}', mine.orderId).replace('{position}', '0');
      const body = bodies[`${operation.method} ${operation.path}`];
      for (const token of [
        undefined,
        theirs.orderToken,
        'garbage',
        `${mine.orderToken}x`,
        conference.token,
      ]) {
        const answer = await call(operation.method, url, {
          ...(token === undefined ? {} : { token }),
          ...(body ? { body } : {}),
        });
        assert.equal(answer.status, 404, `${operation.method} ${url} with ${token ?? 'no token'}`);
        assert.equal(typeof answer.body.error, 'string');
      }
    }
    // Nothing changed, and the right token reads the order (whose access code and registrant it shows).
    const order = await call('GET', `/api/orders/${mine.orderId}?wait=10`, { token: mine.orderToken });
    assert.equal(order.status, 200);
    assert.equal(order.body.registrant, null);
    assert.equal(order.body.lines[0].requested, 1);
    assert.equal(
      (await call('GET', `/api/orders/${mine.orderId}`, { token: theirs.orderToken })).status,
      404,
    );
  });

  test('after confirmation the registrant cannot change, so the customer keeps finding the order; the owner can change it', async () => {
    const conference = await openConference(0);
    const { orderId, orderToken: token } = await placeOrder(conference.slug, conference.seatTypeId);
    const ann = { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' };
    assert.equal((await call('PUT', `/api/orders/${orderId}/registrant`, { token, body: ann })).status, 204);
    await call('GET', `/api/orders/${orderId}?wait=10`, { token });
    assert.equal((await call('POST', `/api/orders/${orderId}/payment`, { token })).status, 200);
    const { accessCode } = (await call('GET', `/api/orders/${orderId}`, { token })).body;

    const eve = { firstName: 'Eve', lastName: 'Evil', email: 'eve@example.com' };
    const refused = await call('PUT', `/api/orders/${orderId}/registrant`, { token, body: eve });
    assert.equal(refused.status, 409);
    assert.equal(
      refused.body.error,
      'The registrant of a confirmed order can only be changed by the conference owner.',
    );
    const found = await call('GET', `/api/orders/find?email=${ann.email}&accessCode=${accessCode}`);
    assert.deepEqual(found.body, { orderId, orderToken: token });

    const owner = `/api/conferences/${conference.id}/orders/${orderId}/registrant`;
    const bob = { firstName: 'Bob', lastName: 'Lee', email: 'bob@example.com' };
    assert.equal((await call('PUT', owner, { body: bob })).status, 401);
    assert.equal((await call('PUT', owner, { token: conference.token, body: bob })).status, 204);
    assert.deepEqual((await call('GET', `/api/orders/${orderId}`, { token })).body.registrant, bob);
    assert.equal(
      (await call('GET', `/api/orders/find?email=${bob.email}&accessCode=${accessCode}`)).status,
      200,
    );
    // An order of another conference, or none, is not the owner's.
    const other = await openConference(0);
    const elsewhere = `/api/conferences/${other.id}/orders/${orderId}/registrant`;
    assert.equal((await call('PUT', elsewhere, { token: other.token, body: bob })).status, 404);
    const missing = `/api/conferences/${conference.id}/orders/${uuidv7()}/registrant`;
    assert.equal((await call('PUT', missing, { token: conference.token, body: bob })).status, 404);
  });
});

describe('the public site', () => {
  test("an order's pages answer 404 without its cookie; placing or finding the order sets it", async () => {
    const conference = await openConference(10);
    const { slug, seatTypeId } = conference;
    const buyer = new InjectBrowser(app);
    const { orderId, response: placed } = await placeSiteOrder(buyer, slug, { [seatTypeId]: 2 });
    assert.equal(placed.statusCode, 303);
    assert.match(
      String(placed.headers['set-cookie']),
      new RegExp(`^order-${orderId}=[\\w-]+; Path=/${slug}; Max-Age=\\d+; HttpOnly; SameSite=Lax$`),
    );
    const registrant = { orderId, orderVersion: '0', ...REGISTRANT_FIELDS };
    const pages = [
      `/${slug}/register?orderId=${orderId}`,
      `/${slug}/registrant?orderId=${orderId}&orderVersion=0`,
      `/${slug}/confirmation?orderId=${orderId}`,
      `/${slug}/order/${orderId}`,
      `/${slug}/order/${orderId}/seats`,
    ];
    const stranger = new InjectBrowser(app, '203.0.113.9');
    for (const url of pages) assert.equal((await stranger.get(url)).statusCode, 404, url);
    // A forged cookie (another order's token) is no better.
    stranger.setCookie(`order-${orderId}`, orderToken(uuidv7(), Buffer.from(SECRET)), `/${slug}`);
    for (const url of pages) assert.equal((await stranger.get(url)).statusCode, 404, url);
    for (const [url, fields] of [
      [`/${slug}/register`, { orderId, orderVersion: '1', [`q_${seatTypeId}`]: '20' }],
      [`/${slug}/registrant`, registrant],
      [`/${slug}/pay`, { orderId, orderVersion: '0' }],
      [`/${slug}/order/${orderId}/seats`, { email_0: 'eve@example.com', firstName_0: 'E', lastName_0: 'E' }],
    ] as const) {
      assert.equal((await stranger.post(url, fields)).statusCode, 404, url);
    }
    const order = await system.waitFor(async () => {
      const current = await system.queries.order(orderId);
      return current?.status === 'reserved' ? current : undefined;
    }, 10_000);
    assert.equal(order?.lines[0]?.requested, 2, 'the stranger changed nothing');
    assert.equal(order?.registrant, null);

    assert.equal((await buyer.get(pages[1] as string)).statusCode, 200);
    const paying = await buyer.post(`/${slug}/registrant`, registrant);
    assert.equal(paying.statusCode, 303);
    const named = await system.waitFor(async () => {
      const current = await system.queries.order(orderId);
      return current?.registrant?.email === 'ann@example.com' ? current : undefined;
    }, 10_000);
    const accessCode = named?.accessCode ?? '';
    // Another browser finds the order by e-mail and code, which hands it the cookie.
    const found = await stranger.post(`/${slug}/order/find`, { email: 'ann@example.com', accessCode });
    assert.equal(found.statusCode, 303);
    assert.equal(found.headers.location, `/${slug}/order/${orderId}`);
    assert.equal((await stranger.get(`/${slug}/order/${orderId}`)).statusCode, 200);
  });
});
