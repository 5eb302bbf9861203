/**
 * Worker processes killed with SIGKILL during a run of registrations: every accepted order still ends confirmed,
 * rejected or expired, and the seats reconcile (confirmed seats + seats left = the quota; never more sold).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { type ChildHandle, postgresForSuite, redisForSuite, runChild } from '@stratus/testkit';
import type { OrderView } from '../read-models/order-view.js';
import { configFromEnv } from './config.js';
import { startOrderPayment } from './payments.js';
import { startConferenceSystem } from './system.js';

const QUOTA = 30;
const ORDERS = 48;
const worker = new URL('./fixtures/worker-process.ts', import.meta.url);

const postgres = await postgresForSuite('conference-crash');
const redis = await redisForSuite('conference-crash');
after(async () => {
  await postgres.release();
  await redis.release();
});

describe('SIGKILL of worker processes during registrations', { skip: postgres.skip ?? redis.skip }, () => {
  test('every order ends confirmed, rejected or expired and the seats reconcile', async () => {
    const env = {
      DATABASE_URL: postgres.url as string,
      DATABASE_SCHEMA: 'crash',
      DATABASE_POOL_SIZE: '4',
      REDIS_URL: redis.url as string,
      REDIS_PREFIX: `${redis.keyPrefix}crash:`,
      RESERVATION_WINDOW_SECONDS: '6',
      RESERVATION_GRACE_SECONDS: '1',
      LEASE_SECONDS: '2',
      OWNER_TOKEN_SECRET: 'a secret all the web processes share, 32+ bytes',
    };
    const startWorker = async () => {
      const child = runChild(worker, { env: { ...env, ROLE: 'worker' }, lifetimeMs: 55_000 });
      await child.nextMessage((message) => (message as { type?: string }).type === 'ready', 20_000);
      return child;
    };
    const workers: ChildHandle[] = [await startWorker(), await startWorker()];
    const web = await startConferenceSystem(configFromEnv({ ...env, ROLE: 'web' }));
    try {
      const { conferenceId } = await web.management.create({
        slug: 'crashconf',
        owner: { name: 'Ann', email: 'ann@example.com' },
        details: {
          name: 'Crash Conf',
          description: 'Workers die here',
          location: 'Loopback',
          tagline: '',
          twitterSearch: '',
          startDate: '2027-01-01',
          endDate: '2027-01-02',
        },
      });
      const general = await web.management.createSeat(conferenceId, {
        name: 'General',
        description: 'Day pass',
        priceCents: 10_000,
        quantity: QUOTA,
      });
      await web.management.publish(conferenceId);
      const counted = await web.waitFor(async () => {
        const seat = (await web.queries.conference(conferenceId))?.seatTypes[0];
        return seat?.available === QUOTA ? true : undefined;
      }, 20_000);
      assert.equal(counted, true);

      const orderIds: string[] = [];
      /** Places an order of 1 or 2 seats; pays for it when reserved, except every fourth (left to expire). */
      const register = async (n: number) => {
        const orderId = uuidv7();
        orderIds.push(orderId);
        await web.commands.send('RegisterToConference', {
          orderId,
          conferenceId,
          seats: [{ seatTypeId: general, quantity: 1 + (n % 2) }],
        });
        const order = await web.waitFor(async () => {
          const view = await web.queries.order(orderId);
          return view !== undefined && view.status !== 'pending' ? view : undefined;
        }, 30_000);
        if (order?.status !== 'reserved' || n % 4 === 3) return;
        const paymentId = await startOrderPayment(web.commands, web.clock, {
          orderId,
          conferenceId,
          description: 'Registration for Crash Conf',
          totalCents: order.totalCents,
          expiresAt: Number.MAX_SAFE_INTEGER,
        });
        await web.commands.send('CompleteThirdPartyProcessorPayment', { paymentId });
      };
      // Eight registrants at a time; a worker is killed after a third of the orders, the other after two thirds.
      let next = 0;
      const registrant = async () => {
        while (next < ORDERS) {
          const n = next++;
          if (n === ORDERS / 3) {
            workers[0]?.kill('SIGKILL');
            workers[0] = await startWorker();
          }
          if (n === (2 * ORDERS) / 3) {
            workers[1]?.kill('SIGKILL');
            workers[1] = await startWorker();
          }
          await register(n);
        }
      };
      await Promise.all(Array.from({ length: 8 }, registrant));

      const final = new Set(['confirmed', 'rejected', 'expired']);
      const ended = await web.waitFor(async () => {
        const orders = await Promise.all(orderIds.map((id) => web.queries.order(id)));
        return orders.every((order) => order !== undefined && final.has(order.status))
          ? (orders as OrderView[])
          : undefined;
      }, 40_000);
      assert.ok(ended, 'every order reached confirmed, rejected or expired');
      const confirmedSeats = ended
        .filter((order) => order.status === 'confirmed')
        .reduce((sum, order) => sum + (order.lines[0]?.reserved ?? 0), 0);
      assert.ok(confirmedSeats > 0, 'some orders were confirmed');
      assert.ok(confirmedSeats <= QUOTA, `never oversold (${confirmedSeats} of ${QUOTA})`);
      const reconciled = await web.waitFor(async () => {
        const seat = (await web.queries.conference(conferenceId))?.seatTypes[0];
        return seat !== undefined && seat.available + confirmedSeats === QUOTA ? seat : undefined;
      }, 20_000);
      assert.ok(reconciled, 'seats left + confirmed seats = the quota');
    } finally {
      await web.stop();
      await Promise.all(workers.map((child) => child.stop()));
    }
  });
});
