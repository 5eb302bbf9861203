/**
 * The web while PostgreSQL restarts (a server of this file's own: ../app/fixtures/restarting-postgres.ts): a request
 * that needs the database answers 503 with Retry-After, on the API and on the sites, never a 500, and is answered
 * again once the server is back.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PostgresServer } from '@stratus/testkit';
import pg from 'pg';
import { restartingPostgres, startOnServer } from '../app/fixtures/restarting-postgres.js';
import { UNAVAILABLE_MESSAGE } from './backend-unavailable.js';
import { buildServer } from './server.js';

const postgres = await restartingPostgres();

/** Polls every 50 ms until `check` holds, for at most `ms`. */
async function until(check: () => Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

describe('the web while PostgreSQL restarts', { skip: postgres.skip }, () => {
  const server = postgres.server as PostgresServer;

  test('answers 503 with Retry-After while the database is down, and again once it is back', async () => {
    const system = await startOnServer(server, 'outage', { ROLE: 'web' });
    const app = await buildServer(system, { logger: false });
    try {
      const api = () => app.inject({ method: 'GET', url: '/api/public/conferences/outage' });
      const site = () => app.inject({ method: 'GET', url: '/' });
      assert.equal((await api()).statusCode, 404);
      assert.equal((await site()).statusCode, 200);

      const restarted = server.restart({ downtimeMs: 3_000 });
      await until(async () => !(await reachable(server.url)), 'PostgreSQL is down', 30_000);
      const answer = await api();
      assert.equal(answer.statusCode, 503);
      assert.equal(answer.headers['retry-after'], '1');
      assert.deepEqual(answer.json(), { error: UNAVAILABLE_MESSAGE });
      const page = await site();
      assert.equal(page.statusCode, 503);
      assert.equal(page.headers['retry-after'], '1');
      assert.match(page.body, /The service is briefly unavailable; please try again in a moment\./);
      await restarted;

      // The pool opens new connections on the next requests.
      await until(async () => (await api()).statusCode === 404, 'the API answers again', 10_000);
      assert.equal((await site()).statusCode, 200);
    } finally {
      await app.close();
      await system.stop();
    }
  });
});
