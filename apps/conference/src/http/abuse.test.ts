/**
 * The abuse limits over HTTP (attack review, findings 4 and 5): access codes cannot be brute-forced on the API or the
 * owner site (rate limits, then a lockout that the right owner outlasts), a client cannot hold every seat, owners
 * rotate their access code, sign in by a posted form rather than a code in the URL, and RATE_LIMITS=off switches the
 * limits off. The limits run on a virtual clock; clients differ by address.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { MemoryRateLimitStore } from '@stratus/resilience';
import { VirtualClock } from '@stratus/testkit';
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify';
import { pino } from 'pino';
import { configFromEnv } from '../app/config.js';
import { type ConferenceSystem, startConferenceSystem } from '../app/system.js';
import { apiRoutes } from './api.js';
import { InjectBrowser, placeSiteOrder } from './fixtures/browser.js';
import { AbuseLimits } from './limits/abuse-limits.js';
import { pageRoutes } from './pages/index.js';
import { buildServer } from './server.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-abuse-'));
let system: ConferenceSystem;
let app: FastifyInstance;
let clock: VirtualClock;

before(async () => {
  system = await startConferenceSystem(configFromEnv({ STRATUS_DATA_DIR: join(directory, 'limited') }));
  clock = new VirtualClock({ now: Date.now() });
  const limits = new AbuseLimits(system.config.abuseLimits, {
    store: new MemoryRateLimitStore(),
    clock,
    holdWindowMs: system.config.reservationWindowMs,
  });
  app = Fastify({ logger: false });
  await app.register(apiRoutes, { system, limits });
  await app.register(pageRoutes, { system, limits });
  await app.ready();
});

after(async () => {
  await app?.close();
  await system?.stop();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

let clients = 0;
/** A client address of its own. */
const client = () => `198.51.100.${++clients}`;

async function call(
  method: InjectOptions['method'],
  url: string,
  options: { body?: object; token?: string; from?: string; on?: FastifyInstance } = {},
) {
  const response = await (options.on ?? app).inject({
    method,
    url,
    remoteAddress: options.from ?? client(),
    headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
    ...(options.body === undefined ? {} : { payload: options.body }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  const body: any = response.body.startsWith('{') ? JSON.parse(response.body) : response.body;
  return { status: response.statusCode, body, headers: response.headers };
}

/** Asserts a 429 with Retry-After and the RateLimit fields; answers Retry-After in seconds. */
function assertLimited(answer: { status: number; headers: Record<string, unknown> }): number {
  assert.equal(answer.status, 429);
  for (const name of [
    'retry-after',
    'ratelimit-limit',
    'ratelimit-remaining',
    'ratelimit-policy',
    'ratelimit',
  ])
    assert.ok(answer.headers[name] !== undefined, `${name} in ${JSON.stringify(answer.headers)}`);
  return Number(answer.headers['retry-after']);
}

let slugs = 0;

async function createConference(on = app) {
  const slug = `abuse_${++slugs}_${Math.floor(Math.random() * 1e6)}`;
  const email = `owner${slugs}@example.com`;
  const created = await call('POST', '/api/conferences', {
    on,
    body: {
      slug,
      name: 'Abuse Summit',
      description: 'Limits',
      location: 'Oslo',
      startDate: '2027-09-01',
      endDate: '2027-09-02',
      ownerName: 'Olga',
      ownerEmail: email,
    },
  });
  assert.equal(created.status, 201);
  const login = await call('POST', '/api/owner/login', {
    on,
    body: { email, accessCode: created.body.accessCode },
  });
  assert.equal(login.status, 200);
  return {
    id: created.body.id as string,
    slug,
    email,
    accessCode: created.body.accessCode as string,
    token: login.body.token as string,
  };
}

async function openConference(quantity: number, on = app) {
  const conference = await createConference(on);
  const seat = await call('POST', `/api/conferences/${conference.id}/seat-types`, {
    on,
    token: conference.token,
    body: { name: 'General', description: 'Day', quantity, price: 10 },
  });
  assert.equal(
    (await call('POST', `/api/conferences/${conference.id}/publish`, { on, token: conference.token })).status,
    204,
  );
  await system.waitFor(
    async () =>
      (await system.queries.conference(conference.id))?.seatTypes[0]?.available === quantity
        ? true
        : undefined,
    10_000,
  );
  return { ...conference, seatTypeId: seat.body.id as string };
}

describe('access codes cannot be brute-forced (finding 4)', () => {
  test('POST /api/owner/login: 5 wrong codes lock the e-mail out (429 with Retry-After) until the owner outlasts it', async () => {
    const conference = await createConference();
    const login = (accessCode: string, from = client()) =>
      call('POST', '/api/owner/login', { from, body: { email: conference.email, accessCode } });
    const ok = await login(conference.accessCode);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['ratelimit-policy'], '"sign-in";q=10;w=60');
    // Each guess from another client: only the count of the e-mail stops them.
    for (let i = 0; i < 5; i++) assert.equal((await login(`WRONG${i}`)).status, 401);
    const locked = await login(conference.accessCode);
    assert.equal(assertLimited(locked), 60);
    assert.match(locked.body.error, /^Too many wrong access codes\. Try again in 60 seconds\.$/);
    // The refusal names both limits the request is under: the rate it passed and the lockout that refused it.
    assert.equal(locked.headers['ratelimit-policy'], '"sign-in";q=10;w=60, "wrong-access-codes-1";q=5;w=60');
    assert.equal(locked.headers['ratelimit-remaining'], '0');
    await clock.advance(60_000);
    assert.equal((await login(conference.accessCode)).status, 200);
  });

  test('GET /api/orders/find: one client guessing codes is locked out, and rate limited before that', async () => {
    const guesser = client();
    const find = (email: string) =>
      call('GET', `/api/orders/find?email=${email}&accessCode=ABCDEF`, { from: guesser });
    for (let i = 0; i < 5; i++) assert.equal((await find(`someone${i}@example.com`)).status, 404);
    assertLimited(await find('someone.else@example.com'));
    // 10 look-ups a minute per client, whatever their outcome: the 11th is refused by the rate.
    const counter = client();
    for (let i = 0; i < 10; i++) await call('GET', '/api/orders/find?email=a@b.cd', { from: counter });
    const limited = await call('GET', '/api/orders/find?email=a@b.cd', { from: counter });
    assertLimited(limited);
    assert.match(limited.body.error, /^Too many requests\./);
    await clock.advance(60_000);
  });

  test('the owner site signs in by a posted form (slug and code); wrong codes from many clients lock the conference', async () => {
    const conference = await createConference();
    const form = await new InjectBrowser(app, client()).get(`/manage/sign-in?slug=${conference.slug}`);
    assert.equal(form.statusCode, 200);
    assert.match(form.body, /<form method="post" action="\/manage\/sign-in">/);
    assert.match(form.body, new RegExp(`name="slug" value="${conference.slug}"`));
    for (let i = 0; i < 5; i++) {
      const wrong = await new InjectBrowser(app, client()).post('/manage/sign-in', {
        slug: conference.slug,
        accessCode: `WRONG${i}`,
      });
      assert.equal(wrong.statusCode, 401);
      assert.match(wrong.body, /Invalid access code\./);
    }
    const owner = new InjectBrowser(app, client());
    const signIn = () =>
      owner.post('/manage/sign-in', { slug: conference.slug, accessCode: conference.accessCode });
    const locked = await signIn();
    assertLimited({ status: locked.statusCode, headers: locked.headers });
    assert.match(locked.body, /Too many wrong access codes\./);
    assert.equal(locked.headers['ratelimit-policy'], '"sign-in";q=10;w=60, "wrong-access-codes-1";q=5;w=60');
    assert.equal((await owner.get(`/manage/${conference.slug}`)).statusCode, 303, 'no session yet');
    await clock.advance(60_000);
    const signedIn = await signIn();
    assert.equal(signedIn.statusCode, 303);
    assert.equal(signedIn.headers.location, `/manage/${conference.slug}`);
    assert.match(
      String(signedIn.headers['set-cookie']),
      new RegExp(`^owner=[\\w.-]+; Path=/manage/${conference.slug}; Max-Age=43200; HttpOnly; SameSite=Lax$`),
    );
    const details = await owner.get(`/manage/${conference.slug}`);
    assert.equal(details.statusCode, 200);
    assert.match(details.body, /Conference details/);
    const signedOut = await owner.post(`/manage/${conference.slug}/sign-out`, {});
    assert.equal(signedOut.statusCode, 303);
    const after = await owner.get(`/manage/${conference.slug}`);
    assert.equal(after.statusCode, 303);
    assert.equal(after.headers.location, `/manage/sign-in?slug=${conference.slug}`);
  });

  test('owners rotate their access code over the API: the old code and the tokens signed for it stop working', async () => {
    const conference = await createConference();
    const rotated = await call('POST', `/api/conferences/${conference.id}/access-code`, {
      token: conference.token,
    });
    assert.equal(rotated.status, 200);
    assert.deepEqual(Object.keys(rotated.body).sort(), ['accessCode', 'token']);
    assert.notEqual(rotated.body.accessCode, conference.accessCode);
    const login = (accessCode: string) =>
      call('POST', '/api/owner/login', { body: { email: conference.email, accessCode } });
    assert.equal((await login(conference.accessCode)).status, 401);
    assert.equal((await login(rotated.body.accessCode)).status, 200);
    const url = `/api/conferences/${conference.id}`;
    const stale = await call('GET', url, { token: conference.token });
    assert.equal(stale.status, 401);
    assert.match(stale.body.error, /access code has changed/);
    const shown = await call('GET', url, { token: rotated.body.token });
    assert.equal(shown.status, 200);
    assert.equal(shown.body.accessCode, rotated.body.accessCode);
    // The event records it: the conference's write side has the new code.
    assert.equal((await system.management.get(conference.id)).accessCode, rotated.body.accessCode);
  });

  test('owners rotate their access code on the owner site: a button; the old code and sessions stop working', async () => {
    const owner = new InjectBrowser(app, client());
    const slug = `abuse_site_${++slugs}_${Math.floor(Math.random() * 1e6)}`;
    const created = await owner.post('/manage/create', {
      ownerName: 'Olga',
      ownerEmail: 'olga@example.com',
      slug,
      name: 'Rotation Summit',
      description: 'Codes',
      location: 'Oslo',
      startDate: '2027-09-01',
      endDate: '2027-09-02',
    });
    assert.equal(created.statusCode, 303);
    assert.equal(created.headers.location, `/manage/${slug}`);
    const details = (await owner.get(`/manage/${slug}`)).body;
    const oldCode = /id="access-code">([^<]+)</.exec(details)?.[1] ?? '';
    assert.match(details, new RegExp(`<form method="post" action="/manage/${slug}/access-code">`));
    assert.match(details, /id="rotate-access-code"/);
    const oldSession = new InjectBrowser(app, client());
    oldSession.setCookie('owner', owner.cookie('owner', `/manage/${slug}`) ?? '', `/manage/${slug}`);
    assert.equal((await oldSession.get(`/manage/${slug}`)).statusCode, 200);

    assert.equal((await owner.post(`/manage/${slug}/access-code`, {})).statusCode, 303);
    const after = await owner.get(`/manage/${slug}`);
    assert.equal(after.statusCode, 200, 'the owner who rotated it goes on');
    const newCode = /id="access-code">([^<]+)</.exec(after.body)?.[1] ?? '';
    assert.match(newCode, /^\w{6}$/);
    assert.notEqual(newCode, oldCode);
    assert.equal((await oldSession.get(`/manage/${slug}`)).statusCode, 303, 'a session of the old code ends');
    const signIn = (accessCode: string) =>
      new InjectBrowser(app, client()).post('/manage/sign-in', { slug, accessCode });
    assert.equal((await signIn(oldCode)).statusCode, 401);
    assert.equal((await signIn(newCode)).statusCode, 303);
  });

  test('old links with the code in the URL redirect to the sign-in form, and the code is not logged', async () => {
    const lines: string[] = [];
    const logs = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logged = await buildServer(system, { loggerInstance: pino({ level: 'info' }, logs) });
    try {
      const conference = await createConference(logged);
      for (const path of ['', '/seats', '/orders', '/edit']) {
        const old = await logged.inject({
          method: 'GET',
          url: `/manage/${conference.slug}/${conference.accessCode}${path}`,
        });
        assert.equal(old.statusCode, 303);
        assert.equal(old.headers.location, `/manage/sign-in?slug=${conference.slug}`);
      }
      const post = await logged.inject({
        method: 'POST',
        url: `/manage/${conference.slug}/${conference.accessCode}/publish`,
      });
      assert.equal(post.statusCode, 303);
      assert.ok(
        lines.some((line) => line.includes('/api/conferences')),
        'requests are logged',
      );
      assert.ok(!lines.some((line) => line.includes(conference.accessCode)), 'the code is in no log line');
    } finally {
      await logged.close();
    }
  });
});

describe('seats cannot be hoarded (finding 5)', () => {
  test('a client holds at most 5 orders and 50 seats of a conference; others can still order', async () => {
    const conference = await openConference(200);
    const hoarder = client();
    const order = (quantity: number, from = hoarder) =>
      call('POST', `/api/public/conferences/${conference.slug}/orders`, {
        from,
        body: { seats: [{ seatTypeId: conference.seatTypeId, quantity }] },
      });
    const placed = [];
    for (let i = 0; i < 4; i++) {
      const answer = await order(10);
      assert.equal(answer.status, 202);
      placed.push(answer.body);
    }
    // 40 seats held: 11 more would pass 50.
    const tooMany = await order(11);
    assert.equal(assertLimited(tooMany), 15 * 60);
    assert.match(
      tooMany.body.error,
      /^At most 50 seats of this conference can be held by one client within 15 minutes\./,
    );
    assert.equal((await order(10)).status, 202);
    const sixth = await order(1);
    assertLimited(sixth);
    assert.match(
      sixth.body.error,
      /^At most 5 orders of this conference can be placed from one client within 15 minutes/,
    );
    // Changing an order cannot add seats past the cap either.
    const [first] = placed;
    const more = await call('PUT', `/api/orders/${first.orderId}/seats`, {
      from: hoarder,
      token: first.orderToken,
      body: { seats: [{ seatTypeId: conference.seatTypeId, quantity: 11 }] },
    });
    assertLimited(more);
    // The registration site counts the same.
    const site = new InjectBrowser(app, hoarder);
    const { response: onSite } = await placeSiteOrder(site, conference.slug, { [conference.seatTypeId]: 1 });
    assert.equal(onSite.statusCode, 429);
    assert.ok(onSite.headers['retry-after']);
    assert.equal((await order(20, client())).status, 202, 'another client still orders');
    await clock.advance(15 * 60_000);
    assert.equal((await order(1)).status, 202, 'the window over, the hoarder may order again');
  });

  test('orders and conferences are rate limited per client', async () => {
    const conference = await openConference(200);
    const busy = client();
    for (let i = 0; i < 10; i++) {
      const answer = await call('POST', `/api/public/conferences/${conference.slug}/orders`, {
        from: busy,
        body: { seats: [{ seatTypeId: 'nope', quantity: 1 }] },
      });
      assert.equal(answer.status, 400);
    }
    assertLimited(
      await call('POST', `/api/public/conferences/${conference.slug}/orders`, {
        from: busy,
        body: { seats: [{ seatTypeId: conference.seatTypeId, quantity: 1 }] },
      }),
    );
    const creator = client();
    for (let i = 0; i < 10; i++)
      assert.equal((await call('POST', '/api/conferences', { from: creator, body: {} })).status, 400);
    assertLimited(await call('POST', '/api/conferences', { from: creator, body: {} }));
    const onSite = await new InjectBrowser(app, creator).post('/manage/create', {});
    assert.equal(onSite.statusCode, 429);
    await clock.advance(60 * 60_000);
  });
});

test('RATE_LIMITS=off switches every abuse limit off', async () => {
  const free = await startConferenceSystem(
    configFromEnv({ STRATUS_DATA_DIR: join(directory, 'free'), RATE_LIMITS: 'off' }),
  );
  const open = await buildServer(free, { logger: false });
  try {
    const conference = await createConference(open);
    const one = '192.0.2.1';
    for (let i = 0; i < 20; i++) {
      const login = await call('POST', '/api/owner/login', {
        on: open,
        from: one,
        body: { email: conference.email, accessCode: `WRONG${i}` },
      });
      assert.equal(login.status, 401);
      assert.equal(login.headers['ratelimit-limit'], undefined);
    }
    assert.equal(
      (
        await call('POST', '/api/owner/login', {
          on: open,
          from: one,
          body: { email: conference.email, accessCode: conference.accessCode },
        })
      ).status,
      200,
    );
    for (let i = 0; i < 15; i++)
      assert.equal(
        (await call('GET', '/api/orders/find?email=a@b.cd&accessCode=ABCDEF', { on: open, from: one }))
          .status,
        404,
      );
  } finally {
    await open.close();
    await free.stop();
  }
});
