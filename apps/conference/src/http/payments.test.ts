import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { configFromEnv } from '../app/config.js';
import { paymentFor, publishedConference, reservedOrder } from '../app/fixtures/system-scenarios.js';
import type { ConferenceSystem } from '../app/system.js';
import { SIGNATURE_HEADER, signWebhook } from '../payments/webhook.js';
import { startTestServer, type TestServer } from './fixtures/test-server.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-payments-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
const SECRET = 'the payments webhook secret, 32 bytes or more';

/** A reserved order of 2 seats at 199.00 and a payment started for its total. */
async function paymentStarted(system: ConferenceSystem) {
  const { conferenceId, general } = await publishedConference(system, { general: 10, workshop: 1 });
  const order = await reservedOrder(system, conferenceId, [{ seatTypeId: general, quantity: 2 }]);
  const paymentId = await paymentFor(system, order);
  await system.waitFor(() => system.queries.payment(paymentId), 10_000);
  return { orderId: order.orderId, paymentId, totalCents: order.totalCents };
}

describe('payments: the simulated processor and its signed webhook (finding 3)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      STRATUS_DATA_DIR: join(directory, 'on'),
      PAYMENTS_WEBHOOK_SECRET: SECRET,
    });
  });
  after(() => server?.stop());

  const webhook = (body: string, signature?: string, remoteAddress = '127.0.0.1') =>
    server.app.inject({
      method: 'POST',
      url: '/api/payments/webhook',
      remoteAddress,
      headers: {
        'content-type': 'application/json',
        ...(signature ? { [SIGNATURE_HEADER]: signature } : {}),
      },
      payload: body,
    });
  const outcome = (paymentId: string, amountCents: number, status = 'completed') =>
    JSON.stringify({ paymentId, status, amountCents, currency: 'USD' });

  test('a forged, tampered or replayed callback is refused with 401 and changes nothing', async () => {
    const { paymentId, totalCents } = await paymentStarted(server.system);
    const body = outcome(paymentId, totalCents);
    const now = server.system.clock.now();
    assert.equal((await webhook(body)).statusCode, 401, 'no signature');
    assert.equal(
      (await webhook(body, signWebhook('another secret, 32 bytes or more!!', body, now))).statusCode,
      401,
    );
    assert.equal(
      (await webhook(outcome(paymentId, 1), signWebhook(SECRET, body, now))).statusCode,
      401,
      'tampered',
    );
    assert.equal(
      (await webhook(body, signWebhook(SECRET, body, now - 10 * 60_000))).statusCode,
      401,
      'replayed',
    );
    assert.equal((await server.system.queries.payment(paymentId))?.status, 'initiated');
  });

  test('a client that sent 10 bad signatures within a minute is refused with 429; others are not', async () => {
    const { paymentId, totalCents } = await paymentStarted(server.system);
    const body = outcome(paymentId, totalCents);
    const forged = signWebhook('another secret, 32 bytes or more!!', body, server.system.clock.now());
    for (let i = 0; i < 10; i++) assert.equal((await webhook(body, forged, '203.0.113.7')).statusCode, 401);
    const signed = signWebhook(SECRET, body, server.system.clock.now());
    const refused = await webhook(body, signed, '203.0.113.7');
    assert.equal(refused.statusCode, 429, 'refused unchecked, even with a good signature');
    assert.ok(Number(refused.headers['retry-after']) > 0, `Retry-After: ${refused.headers['retry-after']}`);
    assert.equal((await server.system.queries.payment(paymentId))?.status, 'initiated');
    assert.equal(
      (await webhook(body, signed, '203.0.113.8')).statusCode,
      204,
      'another client is not limited',
    );
  });

  test('a signed callback settles the payment; a malformed one is a 400', async () => {
    const { orderId, paymentId, totalCents } = await paymentStarted(server.system);
    const bad = '{"paymentId":"x"}';
    assert.equal((await webhook(bad, signWebhook(SECRET, bad, server.system.clock.now()))).statusCode, 400);
    const body = outcome(paymentId, totalCents);
    assert.equal((await webhook(body, signWebhook(SECRET, body, server.system.clock.now()))).statusCode, 204);
    const confirmed = await server.system.waitFor(
      async () => ((await server.system.queries.order(orderId))?.status === 'confirmed' ? true : undefined),
      10_000,
    );
    assert.ok(confirmed, 'the order is confirmed');
  });

  test('a payment of less than the total confirms nothing and is owed back (finding 2)', async () => {
    const { orderId, paymentId } = await paymentStarted(server.system);
    const body = outcome(paymentId, 100);
    assert.equal((await webhook(body, signWebhook(SECRET, body, server.system.clock.now()))).statusCode, 204);
    const owed = await server.system.waitFor(async () => {
      const payment = await server.system.queries.payment(paymentId);
      return payment?.refundDue;
    }, 10_000);
    assert.equal(owed, 'The amount paid does not match the order total.');
    assert.equal((await server.system.queries.order(orderId))?.status, 'reserved');
  });

  test("the registrant's accept at the processor goes through the webhook", async () => {
    const { orderId, paymentId } = await paymentStarted(server.system);
    const accepted = await server.app.inject({ method: 'POST', url: `/api/payments/${paymentId}/accept` });
    assert.equal(accepted.statusCode, 204);
    assert.ok(
      await server.system.waitFor(
        async () => ((await server.system.queries.order(orderId))?.status === 'confirmed' ? true : undefined),
        10_000,
      ),
    );
  });
});

describe('payments: PAYMENTS=off runs no processor', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ STRATUS_DATA_DIR: join(directory, 'off'), PAYMENTS: 'off' });
  });
  after(() => server?.stop());

  test('no processor page, no accept, no webhook; a paid order cannot be paid', async () => {
    const { app } = server;
    assert.equal(
      (await app.inject({ method: 'GET', url: `/payment?paymentId=${uuidv7()}` })).statusCode,
      404,
    );
    assert.equal(
      (await app.inject({ method: 'POST', url: `/api/payments/${uuidv7()}/accept` })).statusCode,
      404,
    );
    assert.equal(
      (await app.inject({ method: 'POST', url: '/api/payments/webhook', payload: {} })).statusCode,
      404,
    );
  });
});

test('the simulated processor is refused in production unless explicitly allowed', () => {
  assert.equal(configFromEnv({}).payments, 'simulated', 'the embedded demo');
  assert.equal(
    configFromEnv({ DATABASE_URL: 'postgres://db/x', OWNER_TOKEN_SECRET: SECRET }).payments,
    'off',
    'scaled out',
  );
  assert.throws(() => configFromEnv({ NODE_ENV: 'production' }), /PAYMENTS/);
  assert.equal(configFromEnv({ NODE_ENV: 'production', PAYMENTS: 'off' }).payments, 'off');
  assert.equal(
    configFromEnv({ NODE_ENV: 'production', PAYMENTS_ALLOW_SIMULATED: 'true' }).payments,
    'simulated',
  );
  assert.throws(() => configFromEnv({ PAYMENTS: 'stripe' }), /PAYMENTS/);
  assert.throws(() => configFromEnv({ PAYMENTS_WEBHOOK_SECRET: 'short' }), /PAYMENTS_WEBHOOK_SECRET/);
});
