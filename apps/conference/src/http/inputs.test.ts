/**
 * The input rules on every backend: the API and the sites refuse text that the shared schemas (./schemas) do not
 * allow with a 400 naming the field, never a 500, on SQLite and on PostgreSQL (which stores neither NUL nor an
 * unpaired surrogate); slugs too long or of other characters create nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { InjectBrowser } from './fixtures/browser.js';
import { testBackends } from './fixtures/test-backends.js';
import { startTestServer, type TestServer } from './fixtures/test-server.js';

const backends = await testBackends('conference-inputs');

/** Text no field takes: NUL, an unpaired surrogate (JSON can carry one), and another control character. */
const BAD_TEXT = { nul: 'Bad\u0000text', surrogate: 'Bad\ud800text', escape: 'Bad\u001btext' };
/** What a form can carry of it (URL encoding writes an unpaired surrogate as U+FFFD). */
const BAD_FORM_TEXT = { nul: BAD_TEXT.nul, escape: BAD_TEXT.escape };

const details = {
  name: 'Input Summit',
  description: 'All about input\nOn two lines',
  location: 'Oslo',
  tagline: 'Strict in what we accept',
  twitterSearch: '#input',
  startDate: '2027-06-01',
  endDate: '2027-06-02',
};
const owner = { ownerName: 'Ingrid', ownerEmail: 'ingrid@example.com' };
const person = { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' };

let slugs = 0;
const newSlug = () => `in_${++slugs}_${Math.floor(Math.random() * 1e6)}`;

for (const backend of backends) {
  describe(`input rules on ${backend.name}`, { skip: backend.skip }, () => {
    let server: TestServer;
    let system: ConferenceSystem;
    let app: FastifyInstance;
    before(async () => {
      server = await startTestServer(backend.env());
      ({ system, app } = server);
    });
    after(() => server?.stop());

    const json = (method: InjectOptions['method'], url: string, body?: unknown, token?: string) =>
      app.inject({
        method,
        url,
        ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
        ...(body === undefined ? {} : { payload: body as object }),
      });
    const form = (url: string, fields: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(fields).toString(),
      });

    /** A 400 whose `fields` name `field`. */
    function assertRefused(response: LightMyRequestResponse, field: string, what: string): void {
      assert.equal(response.statusCode, 400, `${what}: ${response.body}`);
      assert.equal(typeof response.json().fields?.[field], 'string', `${what}: ${response.body}`);
    }

    /** A 400 page showing an error (a field's or the page's). */
    function assertFormRefused(response: LightMyRequestResponse, message: RegExp, what: string): void {
      assert.equal(response.statusCode, 400, `${what}: ${response.body.slice(0, 300)}`);
      assert.match(response.body, /class="(field-)?error" role="alert">/, what);
      assert.match(response.body, message, what);
    }

    /**
     * A published conference with a free seat type (API), its owner token, its owner site URL and a browser signed
     * in to it.
     */
    async function openConference() {
      const slug = newSlug();
      const created = await json('POST', '/api/conferences', { ...details, ...owner, slug });
      assert.equal(created.statusCode, 201, created.body);
      const { id, accessCode } = created.json();
      const login = await json('POST', '/api/owner/login', { email: owner.ownerEmail, accessCode });
      const { token } = login.json();
      const seat = await json(
        'POST',
        `/api/conferences/${id}/seat-types`,
        { name: 'Community', description: 'Free', quantity: 50, price: 0 },
        token,
      );
      assert.equal(seat.statusCode, 201, seat.body);
      assert.equal((await json('POST', `/api/conferences/${id}/publish`, {}, token)).statusCode, 204);
      const counted = await system.waitFor(async () => {
        const view = await system.queries.conference(id);
        return view?.seatTypes[0]?.available === 50 ? true : undefined;
      }, 10_000);
      assert.equal(counted, true, 'the seats reached the availability view');
      const ownerBrowser = new InjectBrowser(app);
      const signedIn = await ownerBrowser.post('/manage/sign-in', { slug, accessCode });
      assert.equal(signedIn.statusCode, 303, signedIn.body);
      return { id, slug, token, seatTypeId: seat.json().id as string, base: `/manage/${slug}`, ownerBrowser };
    }

    /** A free order of one seat, reserved: its id and token. */
    async function reservedOrder(conference: { slug: string; seatTypeId: string }) {
      const placed = await json('POST', `/api/public/conferences/${conference.slug}/orders`, {
        seats: [{ seatTypeId: conference.seatTypeId, quantity: 1 }],
      });
      assert.equal(placed.statusCode, 202, placed.body);
      const { orderId, orderToken } = placed.json();
      const order = await json('GET', `/api/orders/${orderId}?wait=10`, undefined, orderToken);
      assert.equal(order.json().status, 'reserved');
      return { orderId: orderId as string, orderToken: orderToken as string };
    }

    /** A free order of one seat, confirmed, with its seat assignments in the view. */
    async function confirmedOrder(conference: { slug: string; seatTypeId: string }) {
      const order = await reservedOrder(conference);
      const { orderId, orderToken } = order;
      assert.equal(
        (await json('PUT', `/api/orders/${orderId}/registrant`, person, orderToken)).statusCode,
        204,
      );
      assert.equal(
        (await json('POST', `/api/orders/${orderId}/payment`, undefined, orderToken)).statusCode,
        200,
      );
      assert.ok(await system.waitFor(() => system.queries.assignments(orderId), 10_000), 'assignments');
      return order;
    }

    test('a conference with NUL, an unpaired surrogate or a control character in any text answers 400', async () => {
      const fields = [
        ...Object.keys(details).filter((field) => !field.endsWith('Date')),
        'ownerName',
        'ownerEmail',
      ];
      for (const field of [...fields, 'slug']) {
        for (const [kind, text] of Object.entries(BAD_TEXT)) {
          const body = { ...details, ...owner, slug: newSlug(), [field]: text };
          assertRefused(await json('POST', '/api/conferences', body), field, `API ${field} with ${kind}`);
        }
        for (const [kind, text] of Object.entries(BAD_FORM_TEXT)) {
          const page = await form('/manage/create', { ...details, ...owner, slug: newSlug(), [field]: text });
          assertFormRefused(page, /control characters|slug can only contain/, `form ${field} with ${kind}`);
        }
      }
      // A form posted as JSON can carry an unpaired surrogate too.
      const posted = await app.inject({
        method: 'POST',
        url: '/manage/create',
        payload: { ...details, ...owner, slug: newSlug(), name: BAD_TEXT.surrogate },
      });
      assertFormRefused(posted, /control characters/, 'form posted as JSON');
      // Paired surrogates (an emoji), accents and line breaks in a description are text like any other.
      const fine = { ...details, ...owner, slug: newSlug(), name: 'Ünïcode Summit 🎉' };
      assert.equal((await json('POST', '/api/conferences', fine)).statusCode, 201);
    });

    test('every other route and form that takes text refuses it with a 400', async () => {
      const conference = await openConference();
      const { id, slug, token, seatTypeId, base, ownerBrowser } = conference;
      const confirmed = await confirmedOrder(conference);
      const { orderId } = confirmed;
      const { orderId: reserved, orderToken: reservedToken } = await reservedOrder(conference);
      // A registrant's browser, holding both orders' tokens as placing or finding them would have given it.
      const registrant = new InjectBrowser(app);
      registrant.setCookie(`order-${orderId}`, confirmed.orderToken, `/${slug}`);
      registrant.setCookie(`order-${reserved}`, reservedToken, `/${slug}`);
      for (const [kind, text] of Object.entries(BAD_TEXT)) {
        const what = (route: string) => `${route} with ${kind}`;
        assertRefused(
          await json('PATCH', `/api/conferences/${id}`, { name: text }, token),
          'name',
          what('PATCH'),
        );
        assertRefused(
          await json(
            'POST',
            `/api/conferences/${id}/seat-types`,
            { name: text, description: 'd', quantity: 1, price: 1 },
            token,
          ),
          'name',
          what('POST seat type'),
        );
        assertRefused(
          await json(
            'PATCH',
            `/api/conferences/${id}/seat-types/${seatTypeId}`,
            { description: text },
            token,
          ),
          'description',
          what('PATCH seat type'),
        );
        assertRefused(
          await json('POST', '/api/owner/login', { email: `ann${text}@example.com`, accessCode: 'ABCDEF' }),
          'email',
          what('owner login'),
        );
        assertRefused(
          await json(
            'PUT',
            `/api/orders/${reserved}/registrant`,
            { ...person, lastName: text },
            reservedToken,
          ),
          'lastName',
          what('registrant'),
        );
        assertRefused(
          await json(
            'PUT',
            `/api/conferences/${id}/orders/${orderId}/registrant`,
            { ...person, email: `ann${text}@example.com` },
            token,
          ),
          'email',
          what("owner's registrant change"),
        );
        assertRefused(
          await json(
            'PUT',
            `/api/orders/${orderId}/assignments/0`,
            { ...person, firstName: text },
            confirmed.orderToken,
          ),
          'firstName',
          what('attendee'),
        );
        assertRefused(
          await json('POST', `/api/public/conferences/${slug}/orders`, {
            seats: [{ seatTypeId: text, quantity: 1 }],
          }),
          'seats',
          what('order'),
        );
      }
      for (const [kind, text] of Object.entries(BAD_FORM_TEXT)) {
        const what = (route: string) => `${route} with ${kind}`;
        assertFormRefused(
          await ownerBrowser.post(`${base}/edit`, { ...details, location: text }),
          /control/,
          what('edit form'),
        );
        assertFormRefused(
          await ownerBrowser.post(`${base}/seats`, {
            name: text,
            description: 'd',
            quantity: '1',
            price: '1',
          }),
          /control/,
          what('seat form'),
        );
        assertFormRefused(
          await ownerBrowser.post(`${base}/seats/${seatTypeId}`, {
            name: 'General',
            description: text,
            quantity: '1',
            price: '1',
          }),
          /control/,
          what('seat edit form'),
        );
        assertFormRefused(
          await form('/manage/locate', { email: `ann${text}@example.com`, accessCode: 'ABCDEF' }),
          /control/,
          what('locate form'),
        );
        assertFormRefused(
          await form('/manage/sign-in', { slug, accessCode: `AB${text}` }),
          /control/,
          what('sign-in form'),
        );
        assertFormRefused(
          await form(`/${slug}/order/find`, { email: person.email, accessCode: `AB${text}` }),
          /control/,
          what('find order form'),
        );
        assertFormRefused(
          await registrant.post(`/${slug}/registrant`, {
            orderId: reserved,
            orderVersion: '0',
            ...person,
            firstName: text,
            confirmEmail: person.email,
          }),
          /control/,
          what('registrant form'),
        );
        assertFormRefused(
          await registrant.post(`/${slug}/order/${orderId}/seats`, {
            firstName_0: 'Bo',
            lastName_0: text,
            email_0: 'bo@example.com',
          }),
          /control/,
          what('seat assignment form'),
        );
      }
      // Query strings carry no unpaired surrogate (they are UTF-8), but NUL and control characters.
      for (const text of ['%00', '%1B']) {
        const found = await json('GET', `/api/orders/find?email=ann${text}@example.com&accessCode=ABCDEF`);
        assertRefused(found, 'email', `find order with ${text}`);
        const processor = await app.inject({
          method: 'GET',
          url: `/payment?paymentId=${orderId}${text}`,
        });
        assert.equal(processor.statusCode, 400, `payment processor with ${text}`);
      }
      // Nothing reached the orders or the conference.
      assert.deepEqual((await system.queries.order(orderId))?.registrant, person);
      assert.equal((await system.queries.order(reserved))?.registrant, null);
      assert.equal((await system.queries.conference(id))?.name, details.name);
    });

    test('slugs: 1 to 50 lowercase letters, digits, hyphens and underscores; anything else creates nothing', async () => {
      const long = 'a'.repeat(300);
      const page = await form('/manage/create', { ...details, ...owner, slug: long });
      assertFormRefused(page, /at most 50 characters/, 'a 300-character slug on the form');
      assert.match(page.body, /name="slug"/, 'the form is shown again');
      const middling = 'b'.repeat(120);
      assertFormRefused(
        await form('/manage/create', { ...details, ...owner, slug: middling }),
        /at most 50 characters/,
        'a 120-character slug on the form',
      );
      assertRefused(
        await json('POST', '/api/conferences', { ...details, ...owner, slug: middling }),
        'slug',
        '120',
      );
      assert.equal(await system.queries.conferenceBySlug(middling), undefined);
      for (const slug of [
        'Upper',
        'with space',
        'dot.ted',
        'ünï',
        'manage',
        'api',
        'sign-in',
        'a'.repeat(51),
      ]) {
        assertRefused(await json('POST', '/api/conferences', { ...details, ...owner, slug }), 'slug', slug);
        assertFormRefused(await form('/manage/create', { ...details, ...owner, slug }), /slug/, slug);
      }
      // The longest slug is reachable on both sites.
      const longest = `${newSlug()}-`.padEnd(50, 'z');
      const creator = new InjectBrowser(app);
      const created = await creator.post('/manage/create', { ...details, ...owner, slug: longest });
      assert.equal(created.statusCode, 303, created.body);
      const ownerPage = await creator.get(created.headers.location as string);
      assert.equal(ownerPage.statusCode, 200);
      assert.equal((await app.inject({ method: 'GET', url: `/${longest}` })).statusCode, 200);
    });

    test("the owner's sign-in form and a new order's form are read through their schemas", async () => {
      const { slug, seatTypeId } = await openConference();
      const signIn = (fields: Record<string, string>) => form('/manage/sign-in', fields);
      assertFormRefused(
        await signIn({ slug: 'a'.repeat(101), accessCode: 'ABCDEF' }),
        /slug must be at most 100 characters long/,
        'a 101-character slug',
      );
      assertFormRefused(
        await signIn({ slug: 'dot.ted', accessCode: 'ABCDEF' }),
        /slug can only contain letters, digits, hyphens and underscores/,
        'a slug of other characters',
      );
      assertFormRefused(
        await signIn({ slug, accessCode: 'A'.repeat(33) }),
        /accessCode must be at most 32 characters long/,
        'a 33-character access code',
      );
      const browser = new InjectBrowser(app);
      const registerForm = (await browser.get(`/${slug}/register`)).body;
      const field = (name: string) =>
        new RegExp(`name="${name}" value="([^"]*)"`).exec(registerForm)?.[1] ?? '';
      const orderId = field('orderId');
      const posted = await browser.post(`/${slug}/register`, {
        orderId,
        orderToken: field('orderToken').padEnd(65, 'x'),
        orderVersion: '0',
        [`q_${seatTypeId}`]: '1',
      });
      assert.equal(posted.statusCode, 400, posted.body.slice(0, 300));
      assert.match(posted.body, /The registration form is not valid\./);
      assert.equal(await system.queries.order(orderId), undefined, 'no order was placed');
    });

    test('a path naming no possible slug is 404, never 500', async () => {
      for (const url of [
        '/%00',
        '/a%00b/register',
        '/%1B/order/find',
        '/manage/%00',
        '/manage/%00/ABCDEF',
        '/manage/%00/edit',
        '/api/public/conferences/%00',
      ]) {
        const response = await app.inject({ method: 'GET', url });
        assert.equal(response.statusCode, 404, `${url}: ${response.body.slice(0, 200)}`);
      }
      const order = await app.inject({
        method: 'POST',
        url: '/api/public/conferences/%00/orders',
        payload: { seats: [{ seatTypeId: uuidv7(), quantity: 1 }] },
      });
      assert.equal(order.statusCode, 404);
    });
  });
}
