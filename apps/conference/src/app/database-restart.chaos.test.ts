/**
 * The background parts while PostgreSQL restarts (a server of this test's own: restarting the runner's shared one
 * would break the suites running beside it). The event subscriptions and view runners stop at the first read that
 * fails; the system starts them again, so orders placed once the server is back are reserved as before.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import { type PostgresServer, startPostgres, TestServerUnavailableError } from '@stratus/testkit';
import { configFromEnv } from './config.js';
import { type ConferenceSystem, startConferenceSystem } from './system.js';

const isCi = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());

async function ownPostgres(): Promise<PostgresServer | string> {
  try {
    return await startPostgres();
  } catch (error) {
    if (isCi || !(error instanceof TestServerUnavailableError)) throw error;
    return error.message;
  }
}

const postgres = await ownPostgres();

/** Places an order of one seat; resolves with its status once the views show it past pending (or after 20 s). */
async function placeOrder(system: ConferenceSystem, conferenceId: string, seatTypeId: string) {
  const orderId = uuidv7();
  await system.commands.send('RegisterToConference', {
    orderId,
    conferenceId,
    seats: [{ seatTypeId, quantity: 1 }],
  });
  const order = await system.waitFor(async () => {
    const view = await system.queries.order(orderId);
    return view !== undefined && view.status !== 'pending' ? view : undefined;
  }, 20_000);
  return order?.status;
}

describe('the background parts while PostgreSQL restarts', {
  skip: typeof postgres === 'string' ? postgres : false,
}, () => {
  const server = postgres as PostgresServer;
  after(() => server.stop());

  test('start again once it is back: orders placed then are reserved', { timeout: 60_000 }, async () => {
    // The default lease (10 s) outlives the outage: the same process keeps leading, and must restart its parts.
    const system = await startConferenceSystem(
      configFromEnv({
        DATABASE_URL: server.url,
        DATABASE_SCHEMA: 'restart',
        OWNER_TOKEN_SECRET: 'a secret all the web processes share, 32+ bytes',
      }),
    );
    try {
      const { conferenceId } = await system.management.create({
        slug: 'restartconf',
        owner: { name: 'Ann', email: 'ann@example.com' },
        details: {
          name: 'Restart Conf',
          description: 'The database restarts here',
          location: 'Loopback',
          tagline: '',
          twitterSearch: '',
          startDate: '2027-01-01',
          endDate: '2027-01-02',
        },
      });
      const seatTypeId = await system.management.createSeat(conferenceId, {
        name: 'General',
        description: 'Day pass',
        priceCents: 10_000,
        quantity: 10,
      });
      await system.management.publish(conferenceId);
      const counted = await system.waitFor(async () => {
        const seat = (await system.queries.conference(conferenceId))?.seatTypes[0];
        return seat?.available === 10 ? true : undefined;
      }, 20_000);
      assert.equal(counted, true, 'the seats show in the conference view');
      assert.equal(await placeOrder(system, conferenceId, seatTypeId), 'reserved');

      // Down for longer than the subscriptions' and view runners' polls, shorter than the leader's lease.
      await server.restart({ downtimeMs: 4_000 });
      const back = await system.waitFor(async () => (system.ready() ? true : undefined), 20_000);
      assert.equal(back, true, 'every background part runs again');
      assert.equal(await placeOrder(system, conferenceId, seatTypeId), 'reserved');
    } finally {
      await system.stop();
    }
  });
});
