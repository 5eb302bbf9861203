import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { InjectBrowser, placeSiteOrder, REGISTRANT_FIELDS } from '../fixtures/browser.js';
import { startWebApp, type WebApp } from '../fixtures/web-app.js';
import { abuseLimitsFor } from '../limits/abuse-limits.js';
import { orderToken } from '../order-token.js';
import { ownerTokenSecret } from '../owner-token.js';
import { paymentWebhookRoute } from '../payment-callbacks.js';
import { escapeHtml, html, raw } from './html.js';
import { OWNER_TEXT, PUBLIC_TEXT, pageRoutes } from './index.js';

let web: WebApp;
let system: ConferenceSystem;
let app: FastifyInstance;

before(async () => {
  // These tests create many conferences and orders from one client: the abuse limits are tested apart.
  web = await startWebApp({ RATE_LIMITS: 'off' }, async (instance, started) => {
    await instance.register(pageRoutes, { system: started });
    // The simulated processor calls the app back at the API's webhook.
    await instance.register(async (scope) => paymentWebhookRoute(scope, started, abuseLimitsFor(started)));
  });
  ({ system, app } = web);
  browser = new InjectBrowser(app);
});

after(() => web?.close());

/** The browser of these tests, which keeps the sites' cookies; `anonymous` has none. */
let browser: InjectBrowser;
const post = (url: string, fields: Record<string, string>) => browser.post(url, fields);
const get = (url: string) => browser.get(url);
const anonymous = () => new InjectBrowser(app);

/** Gives the browser an order's token, as placing the order on the site would have. */
function holdOrder(slug: string, orderId: string): void {
  browser.setCookie(`order-${orderId}`, orderToken(orderId, ownerTokenSecret(system.config)), `/${slug}`);
}

function field(body: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(body);
  assert.ok(match, `the page has a ${name} field`);
  return match[1] ?? '';
}

let slugs = 0;
const details = {
  name: 'Pages Summit',
  tagline: 'Forms & redirects',
  location: 'Lisbon',
  twitterSearch: '#pages',
  description: 'All about <server-rendered> pages',
  startDate: '2027-05-01',
  endDate: '2027-05-02',
};

/** Creates a conference through the owner site; returns its owner base URL and slug. */
async function createConference(): Promise<{ slug: string; base: string; accessCode: string }> {
  const slug = `pages${++slugs}_${Math.floor(Math.random() * 1e6)}`;
  const response = await post('/manage/create', {
    ownerName: 'Olga Owner',
    ownerEmail: 'olga@example.com',
    slug,
    ...details,
  });
  assert.equal(response.statusCode, 303);
  const base = response.headers.location as string;
  assert.equal(base, `/manage/${slug}`);
  // Creating signs the owner in: the details show the access code, which is in no URL.
  const accessCode = /id="access-code">([^<]+)</.exec((await get(base)).body)?.[1] ?? '';
  assert.match(accessCode, /^\w{6}$/);
  return { slug, base, accessCode };
}

/** A published conference with the given seat types (name, price, quota), all counted by the availability view. */
async function publishedConference(seats: readonly [string, string, number][]) {
  const conference = await createConference();
  for (const [name, price, quantity] of seats) {
    const created = await post(`${conference.base}/seats`, {
      name,
      description: `${name} seats`,
      price,
      quantity: String(quantity),
    });
    assert.equal(created.statusCode, 303);
  }
  assert.equal((await post(`${conference.base}/publish`, {})).statusCode, 303);
  const view = await system.waitFor(async () => {
    const found = await system.queries.conferenceBySlug(conference.slug);
    return found?.isPublished &&
      found.seatTypes.length === seats.length &&
      found.seatTypes.every((seat) => seat.available === seat.quantity)
      ? found
      : undefined;
  }, 10_000);
  assert.ok(view, 'the conference reached the views');
  return { ...conference, view };
}

describe('html helper', () => {
  test('escapes interpolations, keeps nested templates and raw markup, drops null/false', () => {
    const name = '<b>"Tom" & \'Jerry\'</b>';
    assert.equal(escapeHtml(name), '&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;');
    const list = html`<ul>${['a<', 'b'].map((item) => html`<li>${item}</li>`)}</ul>`;
    assert.equal(list.value, '<ul><li>a&lt;</li><li>b</li></ul>');
    assert.equal(html`${raw('<br>')}${null}${false}${undefined}${0}`.value, '<br>0');
  });
});

describe('owner site', () => {
  test('home, create form and its validation messages', async () => {
    const home = await get('/manage');
    assert.equal(home.statusCode, 200);
    assert.match(home.body, /Contoso Conference Management Portal/);
    assert.match(home.body, /Create Conference/);
    const form = await get('/manage/create');
    assert.match(form.body, /Save conference/);
    const invalid = await post('/manage/create', {
      ownerName: '',
      ownerEmail: 'nope',
      slug: 'a b',
      name: '',
    });
    assert.equal(invalid.statusCode, 400);
    assert.match(
      invalid.body,
      /The slug can only contain lowercase letters, digits, hyphens and underscores\./,
    );
    assert.match(invalid.body, /The provided email address is not valid\./);
    assert.match(invalid.body, /The ownerName field is required\./);
  });

  test('a created conference shows its access code; a wrong code is 401, an unknown slug 404, a taken slug 409', async () => {
    const { slug, base, accessCode } = await createConference();
    const index = await get(base);
    assert.equal(index.statusCode, 200);
    assert.match(index.body, /Conference details/);
    assert.match(index.body, new RegExp(`Access Code.*${accessCode}`, 's'));
    assert.match(index.body, /Olga Owner/);
    assert.match(index.body, /All about &lt;server-rendered&gt; pages/, 'user text is escaped');
    const wrong = await anonymous().post('/manage/sign-in', { slug, accessCode: 'XXXXXX' });
    assert.equal(wrong.statusCode, 401);
    assert.match(wrong.body, /Invalid access code\./);
    const taken = await post('/manage/create', {
      ownerName: 'Other',
      ownerEmail: 'other@example.com',
      slug,
      ...details,
    });
    assert.equal(taken.statusCode, 409);
    assert.match(taken.body, new RegExp(OWNER_TEXT.slugTaken));
    const unknown = await get('/manage/no_such_conference');
    assert.equal(unknown.statusCode, 404);
  });

  test('log in by e-mail and access code', async () => {
    const { base, accessCode } = await createConference();
    const failed = await post('/manage/locate', { email: 'olga@example.com', accessCode: 'WRONG1' });
    assert.equal(failed.statusCode, 200);
    assert.match(failed.body, /Could not locate a conference with the provided email and access code\./);
    const ok = await system.waitFor(async () => {
      const response = await post('/manage/locate', { email: 'OLGA@example.com', accessCode });
      return response.statusCode === 303 ? response : undefined;
    }, 5_000);
    assert.equal(ok?.headers.location, base);
  });

  test('edit, seats (validation, edit, delete only before publishing), publish and unpublish', async () => {
    const { base, slug } = await createConference();
    const edited = await post(`${base}/edit`, { ...details, name: 'Renamed Summit' });
    assert.equal(edited.statusCode, 303);
    assert.match((await get(base)).body, /Renamed Summit/);
    const badEdit = await post(`${base}/edit`, { ...details, endDate: '2020-01-01' });
    assert.equal(badEdit.statusCode, 400);
    assert.match(badEdit.body, /The end date cannot be before the start date\./);

    const badSeat = await post(`${base}/seats`, {
      name: 'X',
      description: '',
      price: '1.234',
      quantity: '-1',
    });
    assert.equal(badSeat.statusCode, 400);
    assert.match(badSeat.body, /The name must be 2 to 70 characters long\./);
    assert.match(badSeat.body, /The price must be from 0\.00 to 50000\.00\./);
    assert.match(badSeat.body, /The quantity must be a whole number from 0 to 100000\./);

    for (const name of ['General', 'Temporary']) {
      const created = await post(`${base}/seats`, { name, description: 'd', price: '99.50', quantity: '10' });
      assert.equal(created.statusCode, 303);
    }
    const seats = await get(`${base}/seats`);
    assert.match(seats.body, /Seat types/);
    assert.match(seats.body, /99\.50/);
    const ids = [...seats.body.matchAll(/\/seats\/([0-9a-f-]{36})"/g)].map((match) => match[1]);
    const [general, temporary] = [...new Set(ids)];
    assert.ok(general && temporary);
    const editForm = await get(`${base}/seats/${general}`);
    assert.equal(editForm.statusCode, 200);
    assert.equal(
      (
        await post(`${base}/seats/${general}`, {
          name: 'General',
          description: 'Day',
          price: '120',
          quantity: '12',
        })
      ).statusCode,
      303,
    );
    assert.match((await get(`${base}/seats`)).body, /120\.00/);
    assert.equal((await get(`${base}/seats/${uuidv7()}`)).statusCode, 404);
    assert.equal((await get(`${base}/seats/not-an-id`)).statusCode, 404);
    assert.equal((await post(`${base}/seats/${temporary}/delete`, {})).statusCode, 303);

    assert.equal((await post(`${base}/publish`, {})).statusCode, 303);
    const published = await get(base);
    assert.match(published.body, /Unpublish/);
    const refused = await post(`${base}/seats/${general}/delete`, {});
    assert.equal(refused.statusCode, 409);
    assert.match(
      refused.body,
      /Can&#39;t delete seats from a conference that has been published at least once\./,
    );
    const home = await system.waitFor(async () => {
      const response = await get(`/${slug}`);
      return response.statusCode === 200 && response.body.includes('Register') ? response : undefined;
    }, 5_000);
    assert.ok(home, 'the public home offers registration');
    assert.equal((await post(`${base}/unpublish`, {})).statusCode, 303);
    assert.match((await get(base)).body, />Publish</);
    const orders = await get(`${base}/orders`);
    assert.equal(orders.statusCode, 200);
    assert.match(orders.body, /Orders &amp; Attendees/);
  });
});

describe('public site', () => {
  test('unknown conference codes are 404 "Invalid conference code."; the list shows published conferences', async () => {
    const missing = await get('/no_such_conference/register');
    assert.equal(missing.statusCode, 404);
    assert.match(missing.body, /Invalid conference code\./);
    const { view } = await publishedConference([['Standard', '10', 5]]);
    const list = await get('/');
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /List of conferences/);
    assert.ok(list.body.includes(`href="/${view.slug}"`));
  });

  test('registration form: sold out, quantity bounds, nothing chosen, more than available', async () => {
    const { slug, view } = await publishedConference([
      ['General', '100', 3],
      ['Gone', '50', 0],
    ]);
    const form = await get(`/${slug}/register`);
    assert.equal(form.statusCode, 200);
    assert.match(form.body, new RegExp(`Register to ${details.name}`));
    assert.match(form.body, />Sold out</);
    assert.match(form.body, /Order now/);
    const orderId = field(form.body, 'orderId');
    const orderToken = field(form.body, 'orderToken');
    const [general, gone] = view.seatTypes;
    assert.ok(general && gone);
    const none = await post(`/${slug}/register`, {
      orderId,
      orderToken,
      orderVersion: '0',
      [`q_${general.id}`]: '0',
    });
    assert.equal(none.statusCode, 400);
    assert.match(none.body, /One or more items are required\./);
    const tooMany = await post(`/${slug}/register`, {
      orderId,
      orderToken,
      orderVersion: '0',
      [`q_${general.id}`]: '21',
    });
    assert.equal(tooMany.statusCode, 400);
    assert.match(tooMany.body, /Choose from 0 to 20 seats of each type\./);
    const over = await post(`/${slug}/register`, {
      orderId,
      orderToken,
      orderVersion: '0',
      [`q_${gone.id}`]: '2',
    });
    assert.equal(over.statusCode, 200);
    assert.ok(over.body.includes(PUBLIC_TEXT.partiallyFulfilled));
    const badId = await post(`/${slug}/register`, {
      orderId: 'x',
      orderVersion: '0',
      [`q_${general.id}`]: '1',
    });
    assert.equal(badId.statusCode, 400);
    assert.equal((await get(`/${slug}/register?orderId=nope`)).statusCode, 400);
  });

  test('paid order: register, checkout, payment accepted, thank you, find, display, assign seats', async () => {
    const { slug, view, base } = await publishedConference([
      ['General', '199', 10],
      ['Workshop', '50', 5],
    ]);
    const [general, workshop] = view.seatTypes;
    assert.ok(general && workshop);
    const { orderId, response: registered } = await placeSiteOrder(browser, slug, {
      [general.id]: 2,
      [workshop.id]: 1,
    });
    assert.equal(registered.statusCode, 303);
    assert.equal(registered.headers.location, `/${slug}/registrant?orderId=${orderId}&orderVersion=0`);
    const checkout = await get(registered.headers.location as string);
    assert.equal(checkout.statusCode, 200);
    assert.match(checkout.body, /Seats information/);
    assert.match(checkout.body, /448\.00/);
    assert.match(
      checkout.body,
      /Please complete registration within <strong class="countdown-time">1[45]:\d\d<\/strong> minutes/,
    );
    assert.match(checkout.body, /Credit card/);
    const orderVersion = field(checkout.body, 'orderVersion');
    const registrant = { orderId, orderVersion, firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com' };
    const mismatch = await post(`/${slug}/registrant`, { ...registrant, confirmEmail: 'other@example.com' });
    assert.equal(mismatch.statusCode, 400);
    assert.match(mismatch.body, /E-Mail addresses do not match\./);
    const missing = await post(`/${slug}/registrant`, { ...registrant, lastName: '', confirmEmail: '' });
    assert.match(missing.body, /The last name is required\./);
    assert.match(missing.body, /Please confirm the e-mail address\./);

    const paying = await post(`/${slug}/registrant`, {
      ...registrant,
      confirmEmail: 'ann@example.com',
      paymentType: 'thirdParty',
    });
    assert.equal(paying.statusCode, 303);
    assert.match(paying.headers.location as string, new RegExp(`^/${slug}/third-party-payment\\?paymentId=`));
    const toProcessor = await get(paying.headers.location as string);
    assert.equal(toProcessor.statusCode, 303);
    const processorUrl = toProcessor.headers.location as string;
    assert.match(processorUrl, /^\/payment\?/);
    const processor = await get(processorUrl);
    assert.equal(processor.statusCode, 200);
    assert.match(processor.body, /Simulated Third-party Payment Clearing Processor/);
    assert.match(processor.body, /Registration for Pages Summit/);
    assert.match(processor.body, /448\.00/);
    assert.match(processor.body, /id="simulated-banner"/, 'the simulated processor says what it is');
    // The registrant's choice reaches the app by the processor's signed webhook; the browser is only sent on.
    const accepted = await post('/payment', {
      paymentId: field(processor.body, 'paymentId'),
      outcome: 'accepted',
    });
    assert.equal(accepted.statusCode, 303);
    assert.equal(accepted.headers.location, `/${slug}/confirmation?orderId=${orderId}`);
    const thanks = await get(accepted.headers.location as string);
    assert.equal(thanks.statusCode, 200);
    assert.match(thanks.body, /Thank you/);
    assert.match(thanks.body, /You have successfully submitted your registration!/);
    const accessCode = /id="access-code">([^<]+)</.exec(thanks.body)?.[1] ?? '';
    assert.equal(accessCode.length, 6);

    const otherCode = `${accessCode.slice(0, -1)}${accessCode.endsWith('Z') ? 'Y' : 'Z'}`;
    const notFound = await post(`/${slug}/order/find`, { email: 'ann@example.com', accessCode: otherCode });
    assert.match(notFound.body, /Could not find a registration/);
    const found = await post(`/${slug}/order/find`, { email: 'ANN@example.com', accessCode });
    assert.equal(found.statusCode, 303);
    assert.equal(found.headers.location, `/${slug}/order/${orderId}`);
    const display = await get(found.headers.location as string);
    assert.match(display.body, /Registration details/);
    assert.match(display.body, /Assign seats to attendees/);
    const seats = await get(`/${slug}/order/${orderId}/seats`);
    assert.equal(seats.statusCode, 200);
    assert.match(seats.body, /Assign Seats/);
    assert.match(seats.body, /Attendees will be notified by e-mail/);
    const invalid = await post(`/${slug}/order/${orderId}/seats`, {
      firstName_0: 'Bob',
      lastName_0: '',
      email_0: 'bad',
    });
    assert.equal(invalid.statusCode, 400);
    assert.match(invalid.body, /The provided email address is not valid\./);
    const saved = await post(`/${slug}/order/${orderId}/seats`, {
      firstName_0: 'Bob',
      lastName_0: 'Ray',
      email_0: 'bob@example.com',
      email_1: '',
    });
    assert.equal(saved.statusCode, 303);
    const after = await get(`/${slug}/order/${orderId}`);
    assert.match(after.body, /Bob Ray &lt;bob@example\.com&gt;/);
    const cleared = await post(`/${slug}/order/${orderId}/seats`, { email_0: '' });
    assert.equal(cleared.statusCode, 303);
    assert.doesNotMatch((await get(`/${slug}/order/${orderId}`)).body, /bob@example\.com/);

    const owner = await system.waitFor(async () => {
      const response = await get(`${base}/orders`);
      return response.body.includes('Paid') ? response : undefined;
    }, 5_000);
    assert.ok(owner, 'the owner sees the paid order');
    assert.match(owner.body, /Lee, Ann/);
  });

  test('a rejected payment goes back to checkout with a notice', async () => {
    const { slug, view } = await publishedConference([['General', '10', 5]]);
    const { orderId, response: registered } = await placeSiteOrder(browser, slug, {
      [view.seatTypes[0]?.id ?? '']: 1,
    });
    assert.equal(registered.statusCode, 303);
    const paying = await post(`/${slug}/registrant`, {
      orderId,
      orderVersion: '0',
      ...REGISTRANT_FIELDS,
      paymentType: 'thirdParty',
    });
    const paymentId = new URL(paying.headers.location as string, 'http://x').searchParams.get('paymentId');
    await get(paying.headers.location as string);
    const rejected = await post('/payment', { paymentId: paymentId ?? '', outcome: 'rejected' });
    assert.equal(rejected.statusCode, 303);
    const checkout = await get(rejected.headers.location as string);
    assert.equal(checkout.statusCode, 200);
    assert.ok(checkout.body.includes(PUBLIC_TEXT.paymentRejected));
    const wrongType = await post(`/${slug}/pay`, { orderId, orderVersion: '0', paymentType: 'invoice' });
    assert.equal(wrongType.statusCode, 400);
  });

  test('a free order is confirmed without a payment', async () => {
    const { slug, view } = await publishedConference([['Community', '0', 5]]);
    const { orderId, response: registered } = await placeSiteOrder(browser, slug, {
      [view.seatTypes[0]?.id ?? '']: 2,
    });
    assert.equal(registered.statusCode, 303);
    const checkout = await get(`/${slug}/registrant?orderId=${orderId}&orderVersion=0`);
    assert.doesNotMatch(checkout.body, /Billing information/);
    const done = await post(`/${slug}/registrant`, { orderId, orderVersion: '0', ...REGISTRANT_FIELDS });
    assert.equal(done.statusCode, 303);
    assert.equal(done.headers.location, `/${slug}/confirmation?orderId=${orderId}`);
    const thanks = await get(done.headers.location as string);
    assert.match(thanks.body, /Thank you/);
    assert.doesNotMatch(thanks.body, /being confirmed/);
  });

  test('a partial reservation sends the registrant back to registration with the message', async () => {
    const { slug, view } = await publishedConference([['General', '10', 3]]);
    const seat = view.seatTypes[0]?.id ?? '';
    const first = uuidv7();
    const second = uuidv7();
    await system.commands.send('RegisterToConference', {
      orderId: first,
      conferenceId: view.id,
      seats: [{ seatTypeId: seat, quantity: 2 }],
    });
    // The first order holds its 2 seats before the second asks, so the second is the one left with 1.
    const held = await system.waitFor(async () => {
      const order = await system.queries.order(first);
      return order?.status === 'reserved' ? order : undefined;
    }, 10_000);
    assert.ok(held, 'the first order is reserved');
    await system.commands.send('RegisterToConference', {
      orderId: second,
      conferenceId: view.id,
      seats: [{ seatTypeId: seat, quantity: 2 }],
    });
    holdOrder(slug, second);
    const paying = await post(`/${slug}/pay`, {
      orderId: second,
      orderVersion: '0',
      paymentType: 'thirdParty',
    });
    assert.equal(paying.statusCode, 303);
    assert.equal(paying.headers.location, `/${slug}/register?orderId=${second}`);
    const again = await get(paying.headers.location as string);
    assert.equal(again.statusCode, 200);
    assert.ok(again.body.includes(PUBLIC_TEXT.partiallyFulfilled));
    assert.match(again.body, /id="countdown"/);
    assert.match(again.body, /<option value="1" selected>1<\/option>/);
    const version = field(again.body, 'orderVersion');
    assert.notEqual(version, '0');
    const reordered = await post(`/${slug}/register`, {
      orderId: second,
      orderVersion: version,
      [`q_${seat}`]: '1',
    });
    assert.equal(reordered.statusCode, 303);
    assert.equal(reordered.headers.location, `/${slug}/registrant?orderId=${second}&orderVersion=${version}`);
  });

  test('bad ids and return URLs are 4xx, never 500', async () => {
    const { slug } = await publishedConference([['General', '10', 3]]);
    assert.equal((await get(`/${slug}/order/not-an-id`)).statusCode, 303);
    assert.equal((await get(`/${slug}/order/${uuidv7()}/seats`)).statusCode, 404);
    assert.equal((await get(`/${slug}/confirmation?orderId=zzz`)).statusCode, 400);
    assert.equal((await get(`/${slug}/third-party-payment?paymentId=zzz`)).statusCode, 400);
    // No GET settles a payment any more (finding 3): the old callbacks are gone.
    assert.equal((await get(`/${slug}/third-party-payment-accept?paymentId=${uuidv7()}`)).statusCode, 404);
    assert.equal((await get('/payment?paymentId=zzz')).statusCode, 400);
    assert.equal((await get(`/payment?paymentId=${uuidv7()}`)).statusCode, 404);
    assert.equal((await post('/payment', { paymentId: uuidv7(), outcome: 'maybe' })).statusCode, 400);
    assert.equal((await post('/payment', { paymentId: uuidv7(), outcome: 'accepted' })).statusCode, 404);
    assert.equal((await get(`/${slug}/registrant?orderId=bad`)).statusCode, 400);
    const broken = await app.inject({
      method: 'POST',
      url: `/${slug}/register`,
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    assert.ok(broken.statusCode >= 400 && broken.statusCode < 500, `status ${broken.statusCode}`);
    const find = await post(`/${slug}/order/find`, { email: '', accessCode: '' });
    assert.equal(find.statusCode, 400);
    assert.match((await get(`/${slug}/expired`)).body, /Your order has expired/);
  });
});
