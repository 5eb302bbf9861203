import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { configFromEnv } from '../app/config.js';
import { type ConferenceSystem, startConferenceSystem } from '../app/system.js';
import { ACCESS_CODE_PATTERN } from '../domain/access-code.js';
import type { OrderStatus } from '../read-models/order-view.js';
import { apiRoutes } from './api.js';
import { operations } from './api-operations.js';
import { orderToken } from './order-token.js';
import { signOwnerToken, verifyOwnerToken } from './owner-token.js';

const SECRET = 'a secret for the tests';
const directory = mkdtempSync(join(tmpdir(), 'conference-api-'));
let systems = 0;

interface Api {
  readonly system: ConferenceSystem;
  readonly app: FastifyInstance;
  /** Every route the app registered, as `METHOD url`. */
  readonly routes: string[];
  close(): Promise<void>;
}

/** A system and its API; its abuse limits are off (these tests place many orders and conferences from one client). */
async function startApi(env: Record<string, string> = {}): Promise<Api> {
  const system = await startConferenceSystem(
    configFromEnv({ STRATUS_DATA_DIR: join(directory, `s${++systems}`), RATE_LIMITS: 'off', ...env }),
  );
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 });
  const routes: string[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push(`${method} ${route.url}`);
  });
  await app.register(apiRoutes, { system, ownerTokenSecret: SECRET });
  await app.ready();
  return {
    system,
    app,
    routes,
    async close() {
      await app.close();
      await system.stop();
    },
  };
}

let api: Api;
before(async () => {
  api = await startApi();
});
after(async () => {
  await api?.close();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

interface Answer {
  readonly status: number;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  readonly body: any;
  readonly headers: Record<string, unknown>;
}

/** The token of every order the tests placed (or found), which `call` sends to the order's routes. */
const orderTokens = new Map<string, string>();

/** The id of an order that does not exist, with a valid token (so that only the order's absence shows). */
function unknownOrder(): string {
  const orderId = uuidv7();
  orderTokens.set(orderId, orderToken(orderId, Buffer.from(SECRET)));
  return orderId;
}

async function call(
  method: InjectOptions['method'],
  url: string,
  options: { body?: unknown; token?: string; raw?: string; on?: Api } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  const orderId = /^\/api\/orders\/([0-9a-f-]{36})(?:[/?]|$)/i.exec(url)?.[1]?.toLowerCase();
  const token = options.token ?? (orderId === undefined ? undefined : orderTokens.get(orderId));
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (options.raw !== undefined) headers['content-type'] = 'application/json';
  const response = await (options.on ?? api).app.inject({
    method,
    url,
    headers,
    ...(options.body === undefined ? {} : { payload: options.body as object }),
    ...(options.raw === undefined ? {} : { payload: options.raw }),
  });
  const text = response.body;
  return {
    status: response.statusCode,
    body: text === '' ? undefined : JSON.parse(text),
    headers: response.headers,
  };
}

/** Asserts a 400 whose `fields` name `field`, and returns its message. */
function assertInvalid(answer: Answer, field: string): string {
  assert.equal(answer.status, 400, JSON.stringify(answer.body));
  assert.equal(typeof answer.body.error, 'string');
  assert.equal(
    typeof answer.body.fields?.[field],
    'string',
    `fields.${field} in ${JSON.stringify(answer.body)}`,
  );
  return answer.body.fields[field];
}

function assertStatus(answer: Answer, status: number): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  if (status >= 400) assert.equal(typeof answer.body?.error, 'string');
}

/**
 * Codes that must not open what `code` opens: another last character and, when the code has letters, its lower case
 * (a generated code may be all digits, which lower case leaves as it is).
 */
function otherCodes(code: string): string[] {
  const others = [`${code.slice(0, -1)}${code.endsWith('A') ? 'B' : 'A'}`];
  if (code.toLowerCase() !== code) others.push(code.toLowerCase());
  return others;
}

const details = {
  name: 'CQRS Summit',
  description: 'All about CQRS',
  location: 'Redmond',
  tagline: 'Commands and queries',
  startDate: '2027-03-01',
  endDate: '2027-03-03',
};

function newSlug(): string {
  return `api_${++systems}_${Math.floor(Math.random() * 1e9)}`;
}

interface Owned {
  readonly id: string;
  readonly slug: string;
  readonly accessCode: string;
  readonly token: string;
}

async function createConference(on: Api = api, overrides: Record<string, unknown> = {}): Promise<Owned> {
  const slug = newSlug();
  const created = await call('POST', '/api/conferences', {
    on,
    body: { ...details, slug, ownerName: 'Ann', ownerEmail: 'ann@example.com', ...overrides },
  });
  assertStatus(created, 201);
  const login = await call('POST', '/api/owner/login', {
    on,
    body: { email: 'ann@example.com', accessCode: created.body.accessCode },
  });
  assertStatus(login, 200);
  return { ...created.body, token: login.body.token };
}

async function createSeatType(
  conference: Owned,
  seat: { name: string; price: number; quantity: number },
  on: Api = api,
): Promise<string> {
  const answer = await call('POST', `/api/conferences/${conference.id}/seat-types`, {
    on,
    token: conference.token,
    body: { description: `${seat.name} pass`, ...seat },
  });
  assertStatus(answer, 201);
  return answer.body.id;
}

/** Publishes and waits until the availability view counts every seat of `seatTypeIds`. */
async function publish(conference: Owned, on: Api = api): Promise<void> {
  assertStatus(
    await call('POST', `/api/conferences/${conference.id}/publish`, { on, token: conference.token }),
    204,
  );
  const counted = await on.system.waitFor(async () => {
    const seatTypes = (await on.system.queries.conference(conference.id))?.seatTypes ?? [];
    return seatTypes.every((seat) => seat.available === seat.quantity) ? true : undefined;
  }, 10_000);
  assert.equal(counted, true, 'the seats reached the availability view');
}

/** A published conference with a General (199.5, `general` seats) and a Workshop (50, `workshop` seats) type. */
async function openConference(quotas = { general: 10, workshop: 5 }, on: Api = api) {
  const conference = await createConference(on);
  const general = await createSeatType(
    conference,
    { name: 'General', price: 199.5, quantity: quotas.general },
    on,
  );
  const workshop = await createSeatType(
    conference,
    { name: 'Workshop', price: 50, quantity: quotas.workshop },
    on,
  );
  await publish(conference, on);
  return { conference, general, workshop };
}

async function placeOrder(
  slug: string,
  seats: { seatTypeId: string; quantity: number }[],
  on: Api = api,
): Promise<string> {
  const answer = await call('POST', `/api/public/conferences/${slug}/orders`, { on, body: { seats } });
  assertStatus(answer, 202);
  assert.equal(answer.headers.location, `/api/orders/${answer.body.orderId}`);
  assert.deepEqual(Object.keys(answer.body).sort(), ['orderId', 'orderToken']);
  orderTokens.set(answer.body.orderId, answer.body.orderToken);
  return answer.body.orderId;
}

/** The order once it left `pending` (GET with `wait`). */
async function settledOrder(orderId: string, on: Api = api): Promise<Answer['body']> {
  const answer = await call('GET', `/api/orders/${orderId}?wait=10`, { on });
  assertStatus(answer, 200);
  assert.notEqual(answer.body.status, 'pending');
  return answer.body;
}

/** Waits until the order view has one of `statuses`, then answers the order over HTTP. */
async function orderIn(orderId: string, statuses: OrderStatus[], on: Api = api): Promise<Answer['body']> {
  const reached = await on.system.waitFor(async () => {
    const order = await on.system.queries.order(orderId);
    return order !== undefined && statuses.includes(order.status) ? true : undefined;
  }, 10_000);
  assert.equal(reached, true, `order ${orderId} reached ${statuses.join(' or ')}`);
  const answer = await call('GET', `/api/orders/${orderId}`, { on });
  assertStatus(answer, 200);
  return answer.body;
}

const registrant = { firstName: 'Ann', lastName: 'Lee', email: 'ann.lee@example.com' };

describe('conference owners', () => {
  test('POST /api/conferences creates an unpublished conference and answers its id, slug and access code', async () => {
    const slug = newSlug();
    const answer = await call('POST', '/api/conferences', {
      body: { ...details, slug, ownerName: 'Ann', ownerEmail: 'ann@example.com' },
    });
    assertStatus(answer, 201);
    assert.deepEqual(Object.keys(answer.body).sort(), ['accessCode', 'id', 'slug']);
    assert.equal(answer.body.slug, slug);
    assert.match(answer.body.accessCode, ACCESS_CODE_PATTERN);
    assert.equal(answer.headers.location, `/api/conferences/${answer.body.id}`);
    // The owner can log in at once (the read model has caught up before the answer).
    const login = await call('POST', '/api/owner/login', {
      body: { email: 'ann@example.com', accessCode: answer.body.accessCode },
    });
    assertStatus(login, 200);
    assert.equal(login.body.conferenceId, answer.body.id);
    // Not published yet.
    assertStatus(await call('GET', `/api/public/conferences/${slug}`), 404);
  });

  test('POST /api/conferences refuses invalid input with a message per field', async () => {
    const valid = { ...details, slug: newSlug(), ownerName: 'Ann', ownerEmail: 'ann@example.com' };
    const post = (body: unknown) => call('POST', '/api/conferences', { body });
    const { name: _, ...withoutName } = valid;
    assertInvalid(await post(withoutName), 'name');
    assertInvalid(await post({ ...valid, slug: 'not a slug' }), 'slug');
    assertInvalid(await post({ ...valid, slug: '' }), 'slug');
    assertInvalid(await post({ ...valid, ownerEmail: 'not-an-email' }), 'ownerEmail');
    assertInvalid(await post({ ...valid, name: '   ' }), 'name');
    assertInvalid(await post({ ...valid, name: 42 }), 'name');
    assertInvalid(await post({ ...valid, name: 'x'.repeat(201) }), 'name');
    assertInvalid(await post({ ...valid, startDate: '2027-02-30' }), 'startDate');
    assertInvalid(await post({ ...valid, startDate: '01/03/2027' }), 'startDate');
    assertInvalid(await post({ ...valid, endDate: '2027-02-01' }), 'endDate');
    assert.match(assertInvalid(await post({ ...valid, colour: 'red' }), 'colour'), /not allowed/);
    assertInvalid(await post([valid]), 'body');
    assertInvalid(await call('POST', '/api/conferences'), 'body');
    const malformed = await call('POST', '/api/conferences', { raw: '{"name": "CQRS",' });
    assert.equal(malformed.status, 400);
    assert.deepEqual(malformed.body, { error: 'The body is not valid JSON.', fields: {} });
    // Nothing was created along the way.
    assertStatus(await call('POST', '/api/conferences', { body: valid }), 201);
  });

  test('a slug already taken answers 409; slugs are lower case, so no other case can take it', async () => {
    const slug = newSlug();
    const body = { ...details, slug, ownerName: 'Ann', ownerEmail: 'ann@example.com' };
    assertStatus(await call('POST', '/api/conferences', { body }), 201);
    assertStatus(await call('POST', '/api/conferences', { body }), 409);
    assert.match(
      assertInvalid(
        await call('POST', '/api/conferences', { body: { ...body, slug: slug.toUpperCase() } }),
        'slug',
      ),
      /lowercase letters/,
    );
  });

  test('owner login: e-mail in any case, the access code exactly; a wrong pair answers 401', async () => {
    const conference = await createConference();
    const login = (body: unknown) => call('POST', '/api/owner/login', { body });
    const ok = await login({ email: 'ANN@Example.com', accessCode: conference.accessCode });
    assertStatus(ok, 200);
    assert.deepEqual(Object.keys(ok.body).sort(), ['conferenceId', 'token']);
    assert.equal(ok.body.conferenceId, conference.id);
    for (const accessCode of otherCodes(conference.accessCode))
      assertStatus(await login({ email: 'ann@example.com', accessCode }), 401);
    assertStatus(await login({ email: 'bob@example.com', accessCode: conference.accessCode }), 401);
    assertInvalid(await login({ email: 'ann@example.com' }), 'accessCode');
    assertInvalid(await login({ email: 'ann@example.com', accessCode: 123456 }), 'accessCode');
  });

  test('every owner endpoint answers 401 without a valid token and 403 with the token of another conference', async () => {
    const mine = await createConference();
    const theirs = await createConference();
    const seatTypeId = await createSeatType(mine, { name: 'General', price: 10, quantity: 1 });
    const { code } = verifyOwnerToken(mine.token, Buffer.from(SECRET), Date.now()) ?? { code: '' };
    const expired = signOwnerToken(
      { conferenceId: mine.id, exp: Date.now() - 1000, code },
      Buffer.from(SECRET),
    );
    const forged = signOwnerToken(
      { conferenceId: mine.id, exp: Date.now() + 60_000, code },
      Buffer.from('other'),
    );
    const otherCode = signOwnerToken(
      { conferenceId: mine.id, exp: Date.now() + 60_000, code: `${code}x` },
      Buffer.from(SECRET),
    );
    const [payload, signature] = mine.token.split('.') as [string, string];
    const tampered = `${Buffer.from(JSON.stringify({ conferenceId: theirs.id, exp: Date.now() + 60_000, code })).toString('base64url')}.${signature}`;
    const owned = Object.values(operations).filter((operation) => 'owner' in operation && operation.owner);
    assert.equal(owned.length, 9);
    for (const operation of owned) {
      const url = operation.path
        .replace('{id}', mine.id)
        .replace('{seatTypeId}', seatTypeId)
        .replace('{orderId}', uuidv7());
      const body = operation.method === 'GET' ? undefined : {};
      const send = (token?: string) =>
        call(operation.method, url, { ...(token === undefined ? {} : { token }), body });
      const anonymous = await send();
      assertStatus(anonymous, 401);
      assert.equal(anonymous.headers['www-authenticate'], 'Bearer');
      for (const token of ['garbage', `${payload}.`, expired, forged, tampered, otherCode])
        assertStatus(await send(token), 401);
      assertStatus(await send(theirs.token), 403);
    }
    // A token names its conference and expires.
    const claims = verifyOwnerToken(mine.token, Buffer.from(SECRET), Date.now());
    assert.equal(claims?.conferenceId, mine.id);
    assert.ok((claims?.exp ?? 0) > Date.now() + 60 * 60_000);
    assert.equal(verifyOwnerToken(mine.token, Buffer.from(SECRET), (claims?.exp ?? 0) + 1), undefined);
  });

  test('GET and PATCH /api/conferences/:id show and change the details', async () => {
    const conference = await createConference();
    const url = `/api/conferences/${conference.id}`;
    const shown = await call('GET', url, { token: conference.token });
    assertStatus(shown, 200);
    assert.deepEqual(shown.body, {
      id: conference.id,
      slug: conference.slug,
      accessCode: conference.accessCode,
      ownerName: 'Ann',
      ownerEmail: 'ann@example.com',
      ...details,
      twitterSearch: '',
      isPublished: false,
      wasEverPublished: false,
      seatTypes: [],
    });
    const patched = await call('PATCH', url, {
      token: conference.token,
      body: { name: 'CQRS Summit 2027', twitterSearch: '#cqrs' },
    });
    assertStatus(patched, 204);
    assert.equal(patched.body, undefined);
    const after = await call('GET', url, { token: conference.token });
    assert.equal(after.body.name, 'CQRS Summit 2027');
    assert.equal(after.body.twitterSearch, '#cqrs');
    assert.equal(after.body.location, details.location);
    // The read model shows the change once the PATCH answered.
    assert.equal((await api.system.queries.conference(conference.id))?.name, 'CQRS Summit 2027');
    assertInvalid(
      await call('PATCH', url, { token: conference.token, body: { endDate: '2020-01-01' } }),
      'endDate',
    );
    assertInvalid(await call('PATCH', url, { token: conference.token, body: { name: '' } }), 'name');
    assertInvalid(await call('PATCH', url, { token: conference.token, body: { slug: 'other' } }), 'slug');
    assertInvalid(
      await call('PATCH', url, { token: conference.token, body: { accessCode: 'AAAAAA' } }),
      'accessCode',
    );
    assertStatus(await call('PATCH', url, { token: conference.token, body: {} }), 204);
  });

  test('seat types: created with a decimal price, changed, validated; an unknown seat type answers 404', async () => {
    const conference = await createConference();
    const seats = `/api/conferences/${conference.id}/seat-types`;
    const token = conference.token;
    const created = await call('POST', seats, {
      token,
      body: { name: 'General', description: 'Day pass', quantity: 100, price: 199.5 },
    });
    assertStatus(created, 201);
    assert.deepEqual(Object.keys(created.body), ['id']);
    const id = created.body.id;
    const valid = { name: 'Workshop', description: 'Hands on', quantity: 10, price: 50 };
    assertInvalid(await call('POST', seats, { token, body: { ...valid, price: 10.005 } }), 'price');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, price: 50_000.01 } }), 'price');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, price: '50' } }), 'price');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, quantity: -1 } }), 'quantity');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, quantity: 1.5 } }), 'quantity');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, name: 'W' } }), 'name');
    assertInvalid(await call('POST', seats, { token, body: { ...valid, name: 'x'.repeat(71) } }), 'name');
    const { description: _, ...withoutDescription } = valid;
    assertInvalid(await call('POST', seats, { token, body: withoutDescription }), 'description');

    assertStatus(
      await call('PATCH', `${seats}/${id}`, { token, body: { price: 150.25, quantity: 20 } }),
      204,
    );
    const shown = await call('GET', `/api/conferences/${conference.id}`, { token });
    assert.deepEqual(
      shown.body.seatTypes.map(({ available: _a, ...seat }: Record<string, unknown>) => seat),
      [{ id, name: 'General', description: 'Day pass', quantity: 20, price: 150.25 }],
    );
    assertInvalid(await call('PATCH', `${seats}/${id}`, { token, body: { price: -1 } }), 'price');
    assertInvalid(await call('PATCH', `${seats}/${id}`, { token, body: { seats: 3 } }), 'seats');
    assertStatus(await call('PATCH', `${seats}/${uuidv7()}`, { token, body: { price: 1 } }), 404);
    assertStatus(await call('PATCH', `${seats}/not-a-uuid`, { token, body: { price: 1 } }), 404);
  });

  test('publish and unpublish show and hide the conference on the public API', async () => {
    const conference = await createConference();
    const seatTypeId = await createSeatType(conference, { name: 'General', price: 199.5, quantity: 3 });
    const token = conference.token;
    const publicUrl = `/api/public/conferences/${conference.slug}`;
    assertStatus(await call('GET', publicUrl), 404);
    await publish(conference);
    const shown = await call('GET', publicUrl);
    assertStatus(shown, 200);
    assert.deepEqual(shown.body, {
      id: conference.id,
      slug: conference.slug,
      name: details.name,
      tagline: details.tagline,
      description: details.description,
      location: details.location,
      startDate: details.startDate,
      endDate: details.endDate,
      seatTypes: [
        { id: seatTypeId, name: 'General', description: 'General pass', price: 199.5, available: 3 },
      ],
    });
    const owner = await call('GET', `/api/conferences/${conference.id}`, { token });
    assert.equal(owner.body.isPublished, true);
    assert.equal(owner.body.seatTypes[0].available, 3);
    assertStatus(await call('POST', `/api/conferences/${conference.id}/unpublish`, { token }), 204);
    assertStatus(await call('GET', publicUrl), 404);
    const unpublished = await call('GET', `/api/conferences/${conference.id}`, { token });
    assert.equal(unpublished.body.isPublished, false);
    assert.equal(unpublished.body.wasEverPublished, true);
    assertStatus(await call('POST', `/api/conferences/${conference.id}/publish`, { token }), 204);
    assertStatus(await call('GET', publicUrl), 200);
  });
});

describe('registrants', () => {
  test('the whole registration over HTTP: order, reserve, registrant, pay, confirm, find, assign seats', async () => {
    const { conference, general, workshop } = await openConference();
    const orderId = await placeOrder(conference.slug, [
      { seatTypeId: general, quantity: 2 },
      { seatTypeId: workshop, quantity: 1 },
    ]);
    const reserved = await settledOrder(orderId);
    assert.equal(reserved.status, 'reserved');
    assert.deepEqual(
      { ...reserved, reservationExpiresAt: typeof reserved.reservationExpiresAt },
      {
        orderId,
        conferenceId: conference.id,
        status: 'reserved',
        lines: [
          {
            seatTypeId: general,
            name: 'General',
            requested: 2,
            reserved: 2,
            unitPrice: 199.5,
            lineTotal: 399,
          },
          { seatTypeId: workshop, name: 'Workshop', requested: 1, reserved: 1, unitPrice: 50, lineTotal: 50 },
        ],
        total: 449,
        isFreeOfCharge: false,
        reservationExpiresAt: 'string',
        accessCode: reserved.accessCode,
        registrant: null,
      },
    );
    assert.match(reserved.accessCode, ACCESS_CODE_PATTERN);
    assert.ok(Date.parse(reserved.reservationExpiresAt) > Date.now());
    // The reserved seats are gone from the public availability.
    const seatTypes = (await api.system.waitFor(async () => {
      const shown = (await call('GET', `/api/public/conferences/${conference.slug}`)).body.seatTypes;
      return shown[0].available === 8 ? shown : undefined;
    }, 10_000)) as { available: number }[];
    assert.deepEqual(
      seatTypes.map((seat) => seat.available),
      [8, 4],
    );

    assertStatus(await call('PUT', `/api/orders/${orderId}/registrant`, { body: registrant }), 204);
    assert.deepEqual((await call('GET', `/api/orders/${orderId}`)).body.registrant, registrant);
    const payment = await call('POST', `/api/orders/${orderId}/payment`);
    assertStatus(payment, 201);
    assert.deepEqual(Object.keys(payment.body), ['paymentId']);
    const recorded = await api.system.waitFor(
      () => api.system.queries.payment(payment.body.paymentId),
      10_000,
    );
    assert.equal(recorded?.totalCents, 44_900);
    assert.equal(recorded?.description, `Registration for ${details.name}`);
    assertStatus(await call('POST', `/api/payments/${payment.body.paymentId}/accept`), 204);
    // `until` waits for the statuses asked for, here past `reserved` (which `wait` alone would return at once).
    const waited = await call('GET', `/api/orders/${orderId}?wait=10&until=confirmed,rejected`);
    assertStatus(waited, 200);
    assert.equal(waited.body.status, 'confirmed');
    const confirmed = await orderIn(orderId, ['confirmed']);
    assert.equal(confirmed.reservationExpiresAt, null);
    assert.equal(confirmed.total, 449);

    const found = await call(
      'GET',
      `/api/orders/find?email=${encodeURIComponent('ANN.LEE@example.com')}&accessCode=${reserved.accessCode}`,
    );
    assertStatus(found, 200);
    assert.deepEqual(found.body, { orderId, orderToken: orderTokens.get(orderId) });

    const seatsUrl = `/api/orders/${orderId}/assignments`;
    await api.system.waitFor(() => api.system.queries.assignments(orderId), 10_000);
    const assignments = await call('GET', seatsUrl);
    assertStatus(assignments, 200);
    assert.deepEqual(assignments.body, {
      seats: [
        { position: 0, seatTypeId: general, seatTypeName: 'General', attendee: null },
        { position: 1, seatTypeId: general, seatTypeName: 'General', attendee: null },
        { position: 2, seatTypeId: workshop, seatTypeName: 'Workshop', attendee: null },
      ],
    });
    const attendee = { firstName: 'Bo', lastName: 'Chen', email: 'bo@example.com' };
    assertStatus(await call('PUT', `${seatsUrl}/1`, { body: attendee }), 204);
    assert.deepEqual((await call('GET', seatsUrl)).body.seats[1].attendee, attendee);
    const renamed = { ...attendee, firstName: 'Bob' };
    assertStatus(await call('PUT', `${seatsUrl}/1`, { body: renamed }), 204);
    assert.deepEqual((await call('GET', seatsUrl)).body.seats[1].attendee, renamed);
    assertStatus(await call('PUT', `${seatsUrl}/2`, { body: registrant }), 204);

    const orders = await call('GET', `/api/conferences/${conference.id}/orders`, { token: conference.token });
    assertStatus(orders, 200);
    assert.deepEqual(orders.body, {
      orders: [
        {
          orderId,
          accessCode: reserved.accessCode,
          status: 'paid',
          total: 449,
          registrant,
          seats: [
            { position: 0, seatTypeId: general, seatTypeName: 'General', attendee: null },
            { position: 1, seatTypeId: general, seatTypeName: 'General', attendee: renamed },
            { position: 2, seatTypeId: workshop, seatTypeName: 'Workshop', attendee: registrant },
          ],
        },
      ],
    });

    assertStatus(await call('DELETE', `${seatsUrl}/1`), 204);
    assert.equal((await call('GET', seatsUrl)).body.seats[1].attendee, null);
    assertStatus(await call('DELETE', `${seatsUrl}/1`), 204);

    // A confirmed order can neither change nor be paid again.
    assertStatus(
      await call('PUT', `/api/orders/${orderId}/seats`, {
        body: { seats: [{ seatTypeId: general, quantity: 1 }] },
      }),
      409,
    );
    assertStatus(await call('POST', `/api/orders/${orderId}/payment`), 409);
    assertStatus(await call('POST', `/api/payments/${payment.body.paymentId}/reject`), 409);
  });

  test('a free order is confirmed by its payment request without a payment', async () => {
    const conference = await createConference();
    const free = await createSeatType(conference, { name: 'Community', price: 0, quantity: 5 });
    await publish(conference);
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: free, quantity: 2 }]);
    const reserved = await settledOrder(orderId);
    assert.equal(reserved.status, 'reserved');
    assert.equal(reserved.total, 0);
    assert.equal(reserved.isFreeOfCharge, true);
    const paid = await call('POST', `/api/orders/${orderId}/payment`);
    assertStatus(paid, 200);
    assert.deepEqual(paid.body, { status: 'confirmed' });
    assert.equal((await call('GET', `/api/orders/${orderId}`)).body.status, 'confirmed');
    await api.system.waitFor(() => api.system.queries.assignments(orderId), 10_000);
    assert.equal((await call('GET', `/api/orders/${orderId}/assignments`)).body.seats.length, 2);
  });

  test('more seats than remain: a partial reservation must change its seats before paying; a sold-out type is rejected', async () => {
    const { conference, general } = await openConference({ general: 3, workshop: 1 });
    // The view says 3 are left; asking for 5 is still accepted and gets what remains.
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 5 }]);
    const partial = await settledOrder(orderId);
    assert.equal(partial.status, 'partiallyReserved');
    assert.deepEqual(
      partial.lines.map((line: Record<string, unknown>) => [line.requested, line.reserved, line.lineTotal]),
      [[5, 3, 598.5]],
    );
    assert.equal(partial.total, 598.5);
    const refused = await call('POST', `/api/orders/${orderId}/payment`);
    assertStatus(refused, 409);
    assert.match(refused.body.error, /change the seats/);

    const changed = await call('PUT', `/api/orders/${orderId}/seats`, {
      body: { seats: [{ seatTypeId: general, quantity: 3 }] },
    });
    assertStatus(changed, 202);
    assert.deepEqual(changed.body, { orderId });
    assert.equal(changed.headers.location, `/api/orders/${orderId}`);
    const reserved = await settledOrder(orderId);
    assert.equal(reserved.status, 'reserved');
    assert.deepEqual(
      reserved.lines.map((line: Record<string, unknown>) => [line.requested, line.reserved]),
      [[3, 3]],
    );
    assertStatus(await call('POST', `/api/orders/${orderId}/payment`), 201);

    const soldOut = await api.system.waitFor(async () => {
      const shown = (await call('GET', `/api/public/conferences/${conference.slug}`)).body.seatTypes;
      return shown[0].available === 0 ? true : undefined;
    }, 10_000);
    assert.equal(soldOut, true);
    const late = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 2 }]);
    const rejected = await settledOrder(late);
    assert.equal(rejected.status, 'rejected');
    assert.equal(rejected.lines[0].reserved, 0);
    assertStatus(await call('POST', `/api/orders/${late}/payment`), 409);
  });

  test('a rejected payment leaves the order reserved: a new payment can complete it', async () => {
    const { conference, workshop } = await openConference();
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: workshop, quantity: 1 }]);
    assert.equal((await settledOrder(orderId)).status, 'reserved');
    const first = await call('POST', `/api/orders/${orderId}/payment`);
    assertStatus(first, 201);
    assertStatus(await call('POST', `/api/payments/${first.body.paymentId}/reject`), 204);
    assertStatus(await call('POST', `/api/payments/${first.body.paymentId}/reject`), 204);
    assertStatus(await call('POST', `/api/payments/${first.body.paymentId}/accept`), 409);
    assert.equal((await call('GET', `/api/orders/${orderId}`)).body.status, 'reserved');
    const second = await call('POST', `/api/orders/${orderId}/payment`);
    assertStatus(second, 201);
    assert.notEqual(second.body.paymentId, first.body.paymentId);
    assertStatus(await call('POST', `/api/payments/${second.body.paymentId}/accept`), 204);
    assert.equal((await orderIn(orderId, ['confirmed'])).status, 'confirmed');
    assertStatus(await call('POST', `/api/payments/${uuidv7()}/accept`), 404);
    assertStatus(await call('POST', `/api/payments/${uuidv7()}/reject`), 404);
    assertStatus(await call('POST', '/api/payments/nope/accept'), 404);
  });

  test('placing an order checks the conference and the seats', async () => {
    const { conference, general, workshop } = await openConference();
    const url = `/api/public/conferences/${conference.slug}/orders`;
    const order = (body: unknown) => call('POST', url, { body });
    assert.match(
      assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: 0 }] }), 'seats'),
      /One or more items are required/,
    );
    assert.match(assertInvalid(await order({ seats: [] }), 'seats'), /One or more items are required/);
    assert.match(
      assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: 21 }] }), 'seats'),
      /at most 20/,
    );
    assertInvalid(
      await order({
        seats: [
          { seatTypeId: general, quantity: 20 },
          { seatTypeId: workshop, quantity: 21 },
        ],
      }),
      'seats',
    );
    assert.match(
      assertInvalid(await order({ seats: [{ seatTypeId: uuidv7(), quantity: 1 }] }), 'seats'),
      /Invalid seat type ID/,
    );
    assertInvalid(
      await order({
        seats: [
          { seatTypeId: general, quantity: 1 },
          { seatTypeId: general, quantity: 1 },
        ],
      }),
      'seats',
    );
    assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: -1 }] }), 'seats');
    assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: 1.5 }] }), 'seats');
    assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: '2' }] }), 'seats');
    assertInvalid(await order({ seats: [{ seatTypeId: general, quantity: 1, price: 0 }] }), 'seats');
    assertInvalid(await order({ seats: [{ seatTypeId: general }] }), 'seats');
    assertInvalid(await order({ seats: 'all' }), 'seats');
    assertInvalid(await order({}), 'seats');
    assertInvalid(
      await order({ seats: [{ seatTypeId: general, quantity: 1 }], orderId: uuidv7() }),
      'orderId',
    );
    for (const raw of ['not json', '{"seats": [}'])
      assert.deepEqual(await call('POST', url, { raw }).then(({ status, body }) => ({ status, body })), {
        status: 400,
        body: { error: 'The body is not valid JSON.', fields: {} },
      });
    const seats = [{ seatTypeId: general, quantity: 1 }];
    assertStatus(await call('POST', `/api/public/conferences/${newSlug()}/orders`, { body: { seats } }), 404);
    assertStatus(
      await call('POST', '/api/public/conferences/not%20a%20slug/orders', { body: { seats } }),
      404,
    );
    assertStatus(
      await call('POST', `/api/conferences/${conference.id}/unpublish`, { token: conference.token }),
      204,
    );
    assertStatus(await order({ seats }), 404);
    // No order was placed by any of these.
    assert.deepEqual(await api.system.queries.ordersOfConference(conference.id), []);
  });

  test('GET /api/orders/:id: unknown ids answer 404, a bad wait 400', async () => {
    assertStatus(await call('GET', `/api/orders/${unknownOrder()}`), 404);
    assertStatus(await call('GET', `/api/orders/${unknownOrder()}?wait=0.2`), 404);
    assertStatus(await call('GET', '/api/orders/not-an-id'), 404);
    assertInvalid(await call('GET', `/api/orders/${unknownOrder()}?wait=soon`), 'wait');
    assertInvalid(await call('GET', `/api/orders/${unknownOrder()}?wait=31`), 'wait');
    assertInvalid(await call('GET', `/api/orders/${unknownOrder()}?wait=-1`), 'wait');
    assertInvalid(await call('GET', `/api/orders/${unknownOrder()}?wait=1&until=paid`), 'until');
    // Placing answers once the order can be read, so a GET without wait finds it.
    const { conference, general } = await openConference();
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 1 }]);
    assertStatus(await call('GET', `/api/orders/${orderId}`), 200);
    assertStatus(await call('GET', `/api/orders/${orderId.toUpperCase()}`), 200);
  });

  test('the registrant must be named with a valid e-mail; unknown orders answer 404', async () => {
    const { conference, general } = await openConference();
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 1 }]);
    const url = `/api/orders/${orderId}/registrant`;
    assertInvalid(await call('PUT', url, { body: { ...registrant, email: 'ann@' } }), 'email');
    assertInvalid(await call('PUT', url, { body: { ...registrant, firstName: ' ' } }), 'firstName');
    const { lastName: _, ...withoutLastName } = registrant;
    assertInvalid(await call('PUT', url, { body: withoutLastName }), 'lastName');
    assertInvalid(await call('PUT', url, { body: { ...registrant, phone: '555' } }), 'phone');
    assertStatus(await call('PUT', `/api/orders/${uuidv7()}/registrant`, { body: registrant }), 404);
    assertStatus(await call('PUT', '/api/orders/abc/registrant', { body: registrant }), 404);
    assertStatus(await call('PUT', `/api/orders/${uuidv7()}/seats`, { body: { seats: [] } }), 404);
    assertStatus(await call('POST', `/api/orders/${uuidv7()}/payment`), 404);
    assertStatus(await call('PUT', url, { body: registrant }), 204);
  });

  test('finding an order needs the e-mail and the access code', async () => {
    const { conference, general } = await openConference();
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 1 }]);
    assertStatus(await call('PUT', `/api/orders/${orderId}/registrant`, { body: registrant }), 204);
    const { accessCode } = (await call('GET', `/api/orders/${orderId}`)).body;
    const find = (query: string) => call('GET', `/api/orders/find?${query}`);
    const found = await find(`email=${registrant.email}&accessCode=${accessCode}`);
    assertStatus(found, 200);
    assert.deepEqual(found.body, { orderId, orderToken: orderTokens.get(orderId) });
    for (const other of otherCodes(accessCode))
      assertStatus(await find(`email=${registrant.email}&accessCode=${other}`), 404);
    assertStatus(await find(`email=bob@example.com&accessCode=${accessCode}`), 404);
    assertInvalid(await find(`email=${registrant.email}`), 'accessCode');
    assertInvalid(await find(`accessCode=${accessCode}`), 'email');
  });

  test('seats can be assigned only on a confirmed order, at a position it has', async () => {
    const conference = await createConference();
    const free = await createSeatType(conference, { name: 'Community', price: 0, quantity: 5 });
    await publish(conference);
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: free, quantity: 1 }]);
    assert.equal((await settledOrder(orderId)).status, 'reserved');
    const url = `/api/orders/${orderId}/assignments`;
    const attendee = { firstName: 'Bo', lastName: 'Chen', email: 'bo@example.com' };
    assertStatus(await call('GET', url), 404);
    assertStatus(await call('PUT', `${url}/0`, { body: attendee }), 404);
    assertStatus(await call('DELETE', `${url}/0`), 404);
    assertStatus(await call('POST', `/api/orders/${orderId}/payment`), 200);
    await api.system.waitFor(() => api.system.queries.assignments(orderId), 10_000);
    assertInvalid(await call('PUT', `${url}/0`, { body: { ...attendee, email: 'nope' } }), 'email');
    assertInvalid(await call('PUT', `${url}/0`, { body: { ...attendee, lastName: '' } }), 'lastName');
    assertInvalid(await call('PUT', `${url}/0`, { body: { firstName: 'Bo' } }), 'lastName');
    for (const position of ['1', '-1', 'x', '1.5', '99999999'])
      assertStatus(await call('PUT', `${url}/${position}`, { body: attendee }), 404);
    assertStatus(await call('DELETE', `${url}/1`), 404);
    assertStatus(await call('GET', `/api/orders/${uuidv7()}/assignments`), 404);
    assertStatus(await call('GET', '/api/orders/zzz/assignments'), 404);
    assertStatus(await call('PUT', `${url}/0`, { body: attendee }), 204);
    assert.deepEqual((await call('GET', url)).body.seats[0].attendee, attendee);
  });
});

describe('the API document and errors', () => {
  test('GET /api/openapi.json is an OpenAPI 3.1 document of every route', async () => {
    const answer = await call('GET', '/api/openapi.json');
    assertStatus(answer, 200);
    const document = answer.body;
    assert.equal(document.openapi, '3.1.0');
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) =>
        Object.keys(item).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const registered = api.routes.filter((route) => !route.startsWith('HEAD ')).sort();
    assert.deepEqual(documented.sort(), registered);
    for (const path of [
      '/api/conferences',
      '/api/owner/login',
      '/api/conferences/{id}',
      '/api/conferences/{id}/publish',
      '/api/conferences/{id}/unpublish',
      '/api/conferences/{id}/orders',
      '/api/conferences/{id}/access-code',
      '/api/conferences/{id}/orders/{orderId}/registrant',
      '/api/conferences/{id}/seat-types',
      '/api/conferences/{id}/seat-types/{seatTypeId}',
      '/api/public/conferences/{slug}',
      '/api/public/conferences/{slug}/orders',
      '/api/orders/{orderId}',
      '/api/orders/{orderId}/seats',
      '/api/orders/{orderId}/registrant',
      '/api/orders/{orderId}/payment',
      '/api/payments/{paymentId}/accept',
      '/api/payments/{paymentId}/reject',
      '/api/orders/find',
      '/api/orders/{orderId}/assignments',
      '/api/orders/{orderId}/assignments/{position}',
      '/api/openapi.json',
    ])
      assert.ok(document.paths[path], `${path} is documented`);
    // Every reference resolves, and request bodies are the schemas the routes validate with.
    const references = JSON.stringify(document).match(/#\/components\/schemas\/\w+/g) ?? [];
    for (const reference of references)
      assert.ok(document.components.schemas[reference.split('/').at(-1) as string], reference);
    const placing = document.paths['/api/public/conferences/{slug}/orders'].post;
    assert.equal(
      placing.requestBody.content['application/json'].schema.$ref,
      '#/components/schemas/SeatSelection',
    );
    assert.equal(
      document.components.schemas.SeatSelection.properties.seats.items.properties.quantity.maximum,
      20,
    );
    assert.deepEqual(document.paths['/api/conferences/{id}'].get.security, [{ ownerToken: [] }]);
    // The input rules, as the routes check them (./schemas).
    const { slug, name, description } = document.components.schemas.NewConference.properties;
    assert.deepEqual([slug.maxLength, slug.pattern], [50, '^[a-z0-9_-]*$']);
    assert.deepEqual([name.maxLength, description.maxLength], [100, 2000]);
    assert.ok(name.pattern.includes('\\u0000') && name.pattern.includes('\\ud800'), name.pattern);
    assert.ok(placing.responses['202'].headers.Location);
  });

  test('a body value of another JSON type is refused, never converted', async () => {
    const conference = await createConference();
    const token = conference.token;
    const seats = `/api/conferences/${conference.id}/seat-types`;
    const valid = { name: 'Workshop', description: 'Hands on', quantity: 10, price: 50 };
    // A lenient schema check would read null as 0, true as 1, '10' as 10 and a one-item array as its item.
    const wrong: [keyof typeof valid, unknown, string][] = [
      ['price', null, 'a number'],
      ['price', true, 'a number'],
      ['quantity', '10', 'an integer'],
      ['quantity', [10], 'an integer'],
      ['name', ['Workshop'], 'a string'],
      ['description', 7, 'a string'],
    ];
    for (const [field, value, type] of wrong) {
      const answer = await call('POST', seats, { token, body: { ...valid, [field]: value } });
      assert.equal(assertInvalid(answer, field), `${field} must be ${type}.`);
    }
    const order = `/api/orders/${unknownOrder()}`;
    assert.equal(
      assertInvalid(
        await call('PUT', `${order}/registrant`, { body: { ...registrant, firstName: ['Ann'] } }),
        'firstName',
      ),
      'firstName must be a string.',
    );
    assert.equal(
      assertInvalid(
        await call('PUT', `${order}/seats`, { body: { seats: [{ seatTypeId: uuidv7(), quantity: [1] }] } }),
        'seats',
      ),
      'seats[0].quantity must be an integer.',
    );
    assertInvalid(await call('POST', seats, { token, raw: 'null' }), 'body');
    // None of them reached the conference.
    assert.deepEqual((await call('GET', `/api/conferences/${conference.id}`, { token })).body.seatTypes, []);
  });

  test('an unexpected failure answers 500 without details', async () => {
    const broken = await startApi();
    await broken.system.stop();
    try {
      const answer = await call('GET', `/api/orders/${unknownOrder()}`, { on: broken });
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.body, { error: 'Internal server error.' });
    } finally {
      await broken.app.close();
    }
  });
});

describe('reservations that run out', () => {
  let short: Api;
  before(async () => {
    short = await startApi({ RESERVATION_WINDOW_SECONDS: '1', RESERVATION_GRACE_SECONDS: '1.5' });
  });
  after(async () => {
    await short?.close();
  });

  test('an order past its reservation cannot be paid or changed, and its seats come back', async () => {
    const { conference, general } = await openConference({ general: 4, workshop: 1 }, short);
    const orderId = await placeOrder(conference.slug, [{ seatTypeId: general, quantity: 2 }], short);
    const placed = await settledOrder(orderId, short);
    const expiresAt = Date.parse(placed.reservationExpiresAt);
    // Past the reservation, whether or not the grace period is over yet.
    const past = await short.system.waitFor(
      async () => (short.system.clock.now() > expiresAt ? true : undefined),
      10_000,
    );
    assert.equal(past, true);
    const seats = { seats: [{ seatTypeId: general, quantity: 1 }] };
    assertStatus(await call('POST', `/api/orders/${orderId}/payment`, { on: short }), 409);
    assertStatus(await call('PUT', `/api/orders/${orderId}/seats`, { on: short, body: seats }), 409);
    const expired = await orderIn(orderId, ['expired'], short);
    assert.equal(expired.status, 'expired');
    const refused = await call('POST', `/api/orders/${orderId}/payment`, { on: short });
    assertStatus(refused, 409);
    assert.match(refused.body.error, /expired/);
    assertStatus(await call('PUT', `/api/orders/${orderId}/seats`, { on: short, body: seats }), 409);
    const released = await short.system.waitFor(async () => {
      const shown = (await call('GET', `/api/public/conferences/${conference.slug}`, { on: short })).body;
      return shown.seatTypes[0].available === 4 ? true : undefined;
    }, 10_000);
    assert.equal(released, true);
    // The owner's list drops the expired order.
    const orders = await call('GET', `/api/conferences/${conference.id}/orders`, {
      on: short,
      token: conference.token,
    });
    assert.deepEqual(orders.body, { orders: [] });
  });
});
