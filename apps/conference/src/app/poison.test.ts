import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { EventStore, SqliteEventStoreBackend } from '@stratus/eventsourcing';
import { buildServer } from '../http/server.js';
import { configFromEnv } from './config.js';
import { orderIn, paymentFor, publishedConference, reservedOrder } from './fixtures/system-scenarios.js';
import { startConferenceSystem } from './system.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-poison-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

test('a poison event is parked and reported; every other order goes on (finding 1)', async () => {
  const dataDir = join(directory, 'poison');
  const logged: { details: object; message: string }[] = [];
  const system = await startConferenceSystem(
    configFromEnv({ STRATUS_DATA_DIR: dataDir, HANDLER_MAX_ATTEMPTS: '2', HANDLER_RETRY_SECONDS: '0.01' }),
    { log: { error: (details, message) => logged.push({ details, message }), info: () => {} } },
  );
  const server = await buildServer(system, { logger: false });
  // Another process writes a payment no one started: the orders view cannot apply it.
  const outsider = new EventStore({
    backend: new SqliteEventStoreBackend({ path: join(dataDir, 'conference.db') }),
  });
  try {
    const paymentId = uuidv7();
    await outsider.appendToStream(`payment-${paymentId}`, [
      {
        type: 'PaymentCompleted',
        data: { paymentId, paymentSourceId: uuidv7(), amountCents: 100, currency: 'USD' },
      },
    ]);
    // An order placed after the poison event is reserved, paid and confirmed: nothing waits behind it.
    const { conferenceId, general } = await publishedConference(system, { general: 10, workshop: 1 });
    const reserved = await reservedOrder(system, conferenceId, [{ seatTypeId: general, quantity: 2 }]);
    const payment = await paymentFor(system, reserved);
    await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId: payment });
    assert.ok(await orderIn(system, reserved.orderId, 'confirmed'), 'and confirmed');

    const parked = await system.parkedEvents();
    const [[name, count] = []] = Object.entries(parked);
    assert.match(String(name), /^projection:orders@\d+$/);
    assert.equal(count, 1);
    assert.equal(logged[0]?.message, 'event parked');
    assert.match(JSON.stringify(logged[0]?.details), /payment view: no payment/);

    const ready = await server.inject({ method: 'GET', url: '/health/ready' });
    assert.equal(ready.statusCode, 200, 'still ready: the other orders go on');
    assert.deepEqual(ready.json(), { status: 'degraded', workers: 1, parkedEvents: 1, failingHandlers: [] });
    const metrics = (await server.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(metrics, /^conference_parked_events\{subscription="projection:orders@\d+"\} 1$/m);

    // The operator drops it (as `stratus parked <name> --skip all` does): the system is healthy again.
    assert.equal(await outsider.skipParked(String(name)), 1);
    assert.deepEqual((await server.inject({ method: 'GET', url: '/health/ready' })).json().status, 'ok');
  } finally {
    await server.close();
    await outsider.close();
    await system.stop();
  }
});
