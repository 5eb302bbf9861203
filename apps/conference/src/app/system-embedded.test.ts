import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { EventStore, SqliteEventStoreBackend } from '@stratus/eventsourcing';
import { Registry } from 'prom-client';
import { configFromEnv } from './config.js';
import { directory, embedded, orderIn, publishedConference, scenarios } from './fixtures/system-scenarios.js';
import { startConferenceSystem } from './system.js';

describe('the conference system on the embedded default (SQLite)', () => {
  scenarios(embedded);

  test('hardening: a payment completed after the order expired confirms nothing (F22)', async () => {
    const { system, stop } = await embedded({
      RESERVATION_WINDOW_SECONDS: '0.5',
      RESERVATION_GRACE_SECONDS: '0.3',
    });
    try {
      const { conferenceId, general } = await publishedConference(system, { general: 5, workshop: 1 });
      const orderId = uuidv7();
      await system.commands.send('RegisterToConference', {
        orderId,
        conferenceId,
        seats: [{ seatTypeId: general, quantity: 2 }],
      });
      // The total is known, so the payment does not hang on seeing the reserved state, which lasts only 0.8 s.
      const paymentId = uuidv7();
      await system.commands.send('InitiateThirdPartyProcessorPayment', {
        paymentId,
        paymentSourceId: orderId,
        conferenceId,
        description: 'Registration',
        totalCents: 2 * 19_900,
      });
      assert.ok(await orderIn(system, orderId, 'expired'));
      // What the process manager passed over so far (its metric): the late payment must be one more.
      const registry = new Registry();
      system.registerMetrics(registry);
      const ignored = async () =>
        (await registry.getSingleMetric('conference_process_manager_events_total')?.get())?.values.find(
          (value) => value.labels.kind === 'ignored',
        )?.value ?? 0;
      const ignoredBefore = await ignored();
      await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
      const paid = await system.waitFor(async () => {
        const payment = await system.queries.payment(paymentId);
        return payment?.status === 'completed' ? payment : undefined;
      }, 10_000);
      assert.ok(paid, 'the processor took the payment');
      assert.ok(
        await system.waitFor(async () => ((await ignored()) > ignoredBefore ? true : undefined), 10_000),
        'the process manager passed over the late payment',
      );
      // The late payment reached a completed process: the seats stay released and the order expired.
      const seats = await system.waitFor(async () => {
        const seat = (await system.queries.conference(conferenceId))?.seatTypes[0];
        return seat?.available === 5 ? seat : undefined;
      }, 10_000);
      assert.ok(seats);
      assert.equal((await system.queries.order(orderId))?.status, 'expired');
    } finally {
      await stop();
    }
  });

  test('hardening: an order stored by a web process that died before anything else still gets its seats (F23)', async () => {
    const dataDir = join(directory, 'f23');
    const system = await startConferenceSystem(configFromEnv({ STRATUS_DATA_DIR: dataDir }));
    const outsider = new EventStore({
      backend: new SqliteEventStoreBackend({ path: join(dataDir, 'conference.db') }),
    });
    try {
      const { conferenceId, general } = await publishedConference(system, { general: 5, workshop: 1 });
      // Only the order's events exist (written by another process); no command, no reply, nothing else.
      const orderId = uuidv7();
      await outsider.appendToStream(`order-${orderId}`, [
        {
          type: 'OrderPlaced',
          data: {
            orderId,
            conferenceId,
            seats: [{ seatTypeId: general, quantity: 2 }],
            reservationAutoExpiration: Date.now() + 60_000,
            accessCode: 'F23F23',
          },
        },
      ]);
      const reserved = await orderIn(system, orderId, 'reserved');
      assert.deepEqual(
        reserved?.lines.map((line) => line.reserved),
        [2],
      );
    } finally {
      await outsider.close();
      await system.stop();
    }
  });

  test('data survives a restart', async () => {
    const dataDir = join(directory, 'restart');
    const first = await startConferenceSystem(configFromEnv({ STRATUS_DATA_DIR: dataDir }));
    const { conferenceId } = await publishedConference(first, { general: 4, workshop: 2 });
    await first.stop();
    const second = await startConferenceSystem(configFromEnv({ STRATUS_DATA_DIR: dataDir }));
    try {
      const conference = await second.queries.conference(conferenceId);
      assert.equal(conference?.isPublished, true);
      assert.deepEqual(
        conference?.seatTypes.map((seat) => seat.available),
        [4, 2],
      );
    } finally {
      await second.stop();
    }
  });
});
