/**
 * The background parts while PostgreSQL restarts (a server of this file's own: fixtures/restarting-postgres.ts). The
 * event subscriptions and view runners stop at the first read that fails; the system starts them again, so orders
 * placed once the server is back are reserved as before.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PostgresServer } from '@stratus/testkit';
import { restartingPostgres, startOnServer } from './fixtures/restarting-postgres.js';
import { publishedConference, reservedOrder } from './fixtures/system-scenarios.js';

const postgres = await restartingPostgres();

describe('the background parts while PostgreSQL restarts', { skip: postgres.skip }, () => {
  const server = postgres.server as PostgresServer;

  test('start again once it is back: orders placed then are reserved', { timeout: 60_000 }, async () => {
    // The default lease (10 s) outlives the outage: the same process keeps leading, and must restart its parts.
    const system = await startOnServer(server, 'restart');
    try {
      const { conferenceId, general } = await publishedConference(system, { general: 10, workshop: 10 });
      const oneSeat = [{ seatTypeId: general, quantity: 1 }];
      await reservedOrder(system, conferenceId, oneSeat);

      // Down for longer than the subscriptions' and view runners' polls, shorter than the leader's lease.
      await server.restart({ downtimeMs: 4_000 });
      const back = await system.waitFor(async () => (system.ready() ? true : undefined), 20_000);
      assert.equal(back, true, 'every background part runs again');
      await reservedOrder(system, conferenceId, oneSeat);
    } finally {
      await system.stop();
    }
  });
});
