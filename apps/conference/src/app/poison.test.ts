import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { EventStore, SqliteEventStoreBackend } from '@stratus/eventsourcing';
import { buildServer } from '../http/server.js';
import { configFromEnv } from './config.js';
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
    const { conferenceId } = await system.management.create({
      slug: 'poisonconf',
      owner: { name: 'Ann', email: 'ann@example.com' },
      details: {
        name: 'Poison Conf',
        description: 'One bad event',
        location: 'Lyon',
        tagline: 'Goes on',
        twitterSearch: '#poison',
        startDate: '2027-03-01',
        endDate: '2027-03-02',
      },
    });
    const seat = await system.management.createSeat(conferenceId, {
      name: 'General',
      description: 'Day pass',
      priceCents: 0,
      quantity: 10,
    });
    await system.management.publish(conferenceId);
    await system.waitFor(
      async () =>
        (await system.queries.conference(conferenceId))?.seatTypes[0]?.available === 10 ? true : undefined,
      10_000,
    );
    // An order placed after the poison event is reserved and confirmed: nothing waits behind it.
    const orderId = uuidv7();
    await system.commands.send('RegisterToConference', {
      orderId,
      conferenceId,
      seats: [{ seatTypeId: seat, quantity: 2 }],
    });
    const reserved = await system.waitFor(async () => {
      const order = await system.queries.order(orderId);
      return order?.status === 'reserved' ? order : undefined;
    }, 10_000);
    assert.ok(reserved, 'the order after the poison event is reserved');
    await system.commands.send('ConfirmOrder', { orderId });
    assert.ok(
      await system.waitFor(
        async () => ((await system.queries.order(orderId))?.status === 'confirmed' ? true : undefined),
        10_000,
      ),
    );

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
