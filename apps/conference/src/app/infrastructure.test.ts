import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { systemClock } from '@stratus/core';
import { slidingWindowLog } from '@stratus/resilience';
import { postgresForSuite, redisForSuite, waitUntil } from '@stratus/testkit';
import pg from 'pg';
import { conferenceView } from '../read-models/conference-view.js';
import { configFromEnv } from './config.js';
import { type HeardViewChange, openInfrastructure, type ViewChange } from './infrastructure.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-infrastructure-'));
const postgres = await postgresForSuite('conference-infrastructure');
const redis = await redisForSuite('conference-infrastructure');
after(async () => {
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
  await postgres.release();
  await redis.release();
});

describe('openInfrastructure (embedded)', () => {
  test("a view runner reports its view's activation as a change of every document", async () => {
    const infrastructure = await openInfrastructure(
      configFromEnv({ STRATUS_DATA_DIR: directory }),
      systemClock,
    );
    const changes: ViewChange[] = [];
    const runner = infrastructure.runner(conferenceView, (keys) => changes.push(keys));
    const reader = infrastructure.reader(conferenceView);
    // Read while no version serves: nothing, and nothing that says so apart from the activation.
    assert.equal(await reader.get('conference', 'any'), undefined);
    const running = runner.start();
    await runner.caughtUp;
    await runner.stop();
    await running;
    assert.deepEqual(changes, ['all'], 'documents read before the view served may be stale');
    await infrastructure.close();
  });
});

describe('openInfrastructure (PostgreSQL)', { skip: postgres.skip }, () => {
  test('view changes are unheard until LISTEN takes effect and while its connection is down', async () => {
    const schema = 'infrastructure_listen';
    const infrastructure = await openInfrastructure(
      configFromEnv({
        DATABASE_URL: postgres.url as string,
        DATABASE_SCHEMA: schema,
        OWNER_TOKEN_SECRET: 'a secret all the web processes share, 32+ bytes',
      }),
      systemClock,
    );
    const admin = new pg.Pool({ connectionString: postgres.url as string, max: 1 });
    try {
      const heard: HeardViewChange[] = [];
      infrastructure.viewChanges?.((change) => heard.push(change));
      assert.deepEqual(heard, ['unheard'], 'nothing can be heard before LISTEN');
      await waitUntil(() => heard.length === 2, 'LISTEN to take effect', 10_000);
      assert.deepEqual(heard, ['unheard', 'all']);
      const { rows } = await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1',
        [`LISTEN "${schema}_view_changes"`],
      );
      assert.equal(rows.length, 1);
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
      await waitUntil(() => heard.length === 4, 'the loss, then LISTEN again', 10_000);
      assert.deepEqual(heard.slice(2), ['unheard', 'all']);
    } finally {
      await admin.end();
      await infrastructure.close();
    }
  });
});

describe('openInfrastructure: the abuse limits of web processes scaled out', { skip: postgres.skip }, () => {
  for (const withRedis of [false, true]) {
    test(`count in one place for every process (${withRedis ? 'Redis' : 'PostgreSQL'})`, {
      skip: withRedis && redis.skip,
    }, async () => {
      const env = {
        DATABASE_URL: postgres.url as string,
        DATABASE_SCHEMA: `infrastructure_limits_${withRedis ? 'redis' : 'pg'}`,
        OWNER_TOKEN_SECRET: 'a secret all the web processes share, 32+ bytes',
        ...(withRedis ? { REDIS_URL: redis.url as string, REDIS_PREFIX: redis.keyPrefix as string } : {}),
      };
      const processes = [
        await openInfrastructure(configFromEnv(env), systemClock),
        await openInfrastructure(configFromEnv(env), systemClock),
      ];
      try {
        assert.deepEqual(
          processes.map((web) => web.rateLimits.kind),
          [withRedis ? 'redis' : 'postgres', withRedis ? 'redis' : 'postgres'],
        );
        const [a, b] = processes.map((web) =>
          slidingWindowLog({ name: 'sign-in', limit: 2, windowMs: 60_000, store: web.rateLimits }),
        );
        assert.equal((await a?.acquire('client'))?.allowed, true);
        assert.equal((await b?.acquire('client'))?.allowed, true);
        const third = await a?.acquire('client');
        assert.equal(third?.allowed, false, 'the other process took the second permit');
        assert.equal((await b?.acquire('another client'))?.allowed, true);
      } finally {
        for (const web of processes) await web.close();
      }
    });
  }
});
