import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { EventStore, SqliteEventStoreBackend } from '@stratus/eventsourcing';
import { postgresForSuite, redisForSuite } from '@stratus/testkit';
import { Registry } from 'prom-client';
import type { OrderStatus, OrderView } from '../read-models/order-view.js';
import { configFromEnv } from './config.js';
import { type ConferenceSystem, startConferenceSystem } from './system.js';
import { startSystem } from './threaded-system.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-system-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let systems = 0;

/** How a scenario gets a system: the web-facing one it drives, and a stop for everything it started. */
type Deploy = (env?: Record<string, string>) => Promise<{ system: ConferenceSystem; stop(): Promise<void> }>;

const embedded: Deploy = async (env = {}) => {
  const system = await startConferenceSystem(
    configFromEnv({ STRATUS_DATA_DIR: join(directory, `s${++systems}`), ...env }),
  );
  return { system, stop: () => system.stop() };
};

/** What `npm start` runs: the web parts here, the background parts in a worker thread, one SQLite file. */
const embeddedThreads: Deploy = async (env = {}) => {
  const system = await startSystem(
    configFromEnv({ STRATUS_DATA_DIR: join(directory, `s${++systems}`), ...env }),
  );
  return { system, stop: () => system.stop() };
};

const postgres = await postgresForSuite('conference-system');
const redis = await redisForSuite('conference-system');
after(async () => {
  await postgres.release();
  await redis.release();
});

/** Scaled out: two workers and a web process apart (each with its own pools), on PostgreSQL and maybe Redis. */
const distributed =
  (queues: 'redis' | 'postgres'): Deploy =>
  async (env = {}) => {
    const shared = {
      DATABASE_URL: postgres.url as string,
      DATABASE_SCHEMA: `conference_${++systems}`,
      DATABASE_POOL_SIZE: '4',
      OWNER_TOKEN_SECRET: 'a secret all the web processes share, 32+ bytes',
      ...(queues === 'redis'
        ? { REDIS_URL: redis.url as string, REDIS_PREFIX: `${redis.keyPrefix}${systems}:` }
        : {}),
      ...env,
    };
    const workers = [
      await startConferenceSystem(configFromEnv({ ...shared, ROLE: 'worker' })),
      await startConferenceSystem(configFromEnv({ ...shared, ROLE: 'worker' })),
    ];
    const system = await startConferenceSystem(configFromEnv({ ...shared, ROLE: 'web' }));
    return {
      system,
      async stop() {
        await system.stop();
        for (const worker of workers) await worker.stop();
      },
    };
  };

const details = {
  name: 'CQRS Summit',
  description: 'All about CQRS',
  location: 'Redmond',
  tagline: 'Commands and queries',
  twitterSearch: '#cqrs',
  startDate: '2027-03-01',
  endDate: '2027-03-03',
};

/** A published conference with two seat types whose seats the availability aggregate already counts. */
async function publishedConference(system: ConferenceSystem, quotas: { general: number; workshop: number }) {
  const { conferenceId } = await system.management.create({
    slug: `conf${systems}${Math.floor(Math.random() * 1e6)}`,
    owner: { name: 'Ann', email: 'ann@example.com' },
    details,
  });
  const general = await system.management.createSeat(conferenceId, {
    name: 'General',
    description: 'Day pass',
    priceCents: 19_900,
    quantity: quotas.general,
  });
  const workshop = await system.management.createSeat(conferenceId, {
    name: 'Workshop',
    description: 'Hands on',
    priceCents: 5_000,
    quantity: quotas.workshop,
  });
  await system.management.publish(conferenceId);
  const counted = await system.waitFor(async () => {
    const seatTypes = (await system.queries.conference(conferenceId))?.seatTypes ?? [];
    return seatTypes.length === 2 && seatTypes.every((seat) => seat.available === seat.quantity)
      ? true
      : undefined;
  }, 10_000);
  assert.equal(counted, true, 'the seats reached the availability view');
  return { conferenceId, general, workshop };
}

function orderIn(
  system: ConferenceSystem,
  orderId: string,
  ...statuses: OrderStatus[]
): Promise<OrderView | undefined> {
  return system.waitFor(async () => {
    const order = await system.queries.order(orderId);
    return order !== undefined && statuses.includes(order.status) ? order : undefined;
  }, 10_000);
}

function scenarios(deploy: Deploy): void {
  test('a registrant reserves, pays and gets seat assignments; seats are committed', async () => {
    const { system, stop } = await deploy();
    try {
      const { conferenceId, general, workshop } = await publishedConference(system, {
        general: 10,
        workshop: 5,
      });
      const orderId = uuidv7();
      await system.commands.send('RegisterToConference', {
        orderId,
        conferenceId,
        seats: [
          { seatTypeId: general, quantity: 2 },
          { seatTypeId: workshop, quantity: 1 },
        ],
      });
      const reserved = await orderIn(system, orderId, 'reserved');
      assert.equal(reserved?.totalCents, 2 * 19_900 + 5_000);
      assert.deepEqual(
        reserved?.lines.map((line) => [line.requested, line.reserved]),
        [
          [2, 2],
          [1, 1],
        ],
      );
      await system.commands.send('AssignRegistrantDetails', {
        orderId,
        firstName: 'Ann',
        lastName: 'Lee',
        email: 'ann@example.com',
      });
      const paymentId = uuidv7();
      await system.commands.send('InitiateThirdPartyProcessorPayment', {
        paymentId,
        paymentSourceId: orderId,
        conferenceId,
        description: 'Registration for CQRS Summit',
        totalCents: reserved?.totalCents ?? 0,
      });
      await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
      const confirmed = await orderIn(system, orderId, 'confirmed');
      assert.equal(confirmed?.reservationExpiresAt, null);
      const assignments = await system.waitFor(() => system.queries.assignments(orderId), 10_000);
      assert.deepEqual(
        assignments?.seats.map((seat) => seat.seatTypeId),
        [general, general, workshop],
      );
      const found = await system.queries.findOrder('ANN@example.com', confirmed?.accessCode ?? '');
      assert.equal(found?.orderId, orderId);
      const seatTypes = (await system.queries.conference(conferenceId))?.seatTypes;
      assert.deepEqual(
        seatTypes?.map((seat) => seat.available),
        [8, 4],
      );
    } finally {
      await stop();
    }
  });

  test('40 registrants race for 10 seats: exactly 10 are confirmed, none oversold', async () => {
    const { system, stop } = await deploy();
    try {
      const { conferenceId, general } = await publishedConference(system, { general: 10, workshop: 1 });
      const orderIds = Array.from({ length: 40 }, () => uuidv7());
      await Promise.all(
        orderIds.map((orderId) =>
          system.commands.send('RegisterToConference', {
            orderId,
            conferenceId,
            seats: [{ seatTypeId: general, quantity: 1 }],
          }),
        ),
      );
      const settled = await Promise.all(orderIds.map((id) => orderIn(system, id, 'reserved', 'rejected')));
      const reserved = settled.filter((order) => order?.status === 'reserved');
      assert.equal(reserved.length, 10, 'the reservations hand out exactly the quota');
      assert.equal(settled.filter((order) => order?.status === 'rejected').length, 30);
      await Promise.all(
        reserved.map(async (order) => {
          const paymentId = uuidv7();
          await system.commands.send('InitiateThirdPartyProcessorPayment', {
            paymentId,
            paymentSourceId: order?.orderId ?? '',
            conferenceId,
            description: 'Registration',
            totalCents: order?.totalCents ?? 0,
          });
          await system.commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
        }),
      );
      const confirmed = await Promise.all(
        reserved.map((order) => orderIn(system, order?.orderId ?? '', 'confirmed')),
      );
      assert.equal(confirmed.filter((order) => order !== undefined).length, 10);
      const seat = (await system.queries.conference(conferenceId))?.seatTypes.find(
        (type) => type.id === general,
      );
      assert.equal(seat?.available, 0);
    } finally {
      await stop();
    }
  });

  test('an order asking for more than is left gets what remains, and the seats come back when it expires', async () => {
    // The partial reservation must be seen before it expires: 2.5 s is ample even on a loaded box.
    const { system, stop } = await deploy({
      RESERVATION_WINDOW_SECONDS: '2',
      RESERVATION_GRACE_SECONDS: '0.5',
    });
    try {
      const { conferenceId, general } = await publishedConference(system, { general: 3, workshop: 1 });
      const orderId = uuidv7();
      await system.commands.send('RegisterToConference', {
        orderId,
        conferenceId,
        seats: [{ seatTypeId: general, quantity: 5 }],
      });
      // The order's events (partially reserved, then the new totals) are one append, but the view may apply them in
      // two batches, so a read between them sees the old total (CI on Node 22 saw 99,500): wait for both.
      const lines = (order: OrderView | undefined) =>
        order?.lines.map((line) => [line.requested, line.reserved, line.lineTotalCents]);
      const partial = await system.waitFor(async () => {
        const order = await system.queries.order(orderId);
        return order?.status === 'partiallyReserved' && order.lines[0]?.lineTotalCents !== 5 * 19_900
          ? order
          : undefined;
      }, 10_000);
      assert.deepEqual(lines(partial), [[5, 3, 3 * 19_900]]);
      const expired = await orderIn(system, orderId, 'expired');
      assert.ok(expired, 'the process expired the order after window + grace');
      const released = await system.waitFor(async () => {
        const seat = (await system.queries.conference(conferenceId))?.seatTypes[0];
        return seat?.available === 3 ? seat : undefined;
      }, 10_000);
      assert.ok(released, 'the seats were released');
    } finally {
      await stop();
    }
  });
}

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

describe('the conference system on the embedded default with its background thread (as npm start runs it)', () => {
  scenarios(embeddedThreads);

  test('the background thread passes on its stats and readiness; stop ends it', async () => {
    const { system, stop } = await embeddedThreads();
    try {
      await publishedConference(system, { general: 1, workshop: 1 });
      assert.equal(system.ready(), true);
      assert.equal(await system.liveWorkers(), 1, 'the background thread is the worker');
      const stats = await system.backgroundStats();
      assert.deepEqual(stats.viewLag.map((lag) => lag.view).sort(), ['conferences', 'orders']);
      const registry = new Registry();
      system.registerMetrics(registry);
      const metrics = await registry.metrics();
      assert.match(metrics, /conference_view_lag_events\{view="orders"\} \d+/);
    } finally {
      await stop();
    }
    assert.equal(system.ready(), false);
  });
});

describe('the conference system scaled out (PostgreSQL + Redis, two workers, a web process)', {
  skip: postgres.skip ?? redis.skip,
}, () => {
  scenarios(distributed('redis'));

  test('the web process counts the workers alive', async () => {
    const { system, stop } = await distributed('redis')();
    try {
      assert.equal(await system.liveWorkers(), 2);
    } finally {
      await stop();
    }
  });
});

describe('the conference system scaled out on PostgreSQL alone (queues too)', { skip: postgres.skip }, () => {
  scenarios(distributed('postgres'));
});
