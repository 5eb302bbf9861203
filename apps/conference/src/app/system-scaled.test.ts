import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { postgresForSuite, redisForSuite } from '@stratus/testkit';
import { distributed, scenarios } from './fixtures/system-scenarios.js';

const postgres = await postgresForSuite('conference-system-redis');
const redis = await redisForSuite('conference-system-redis');
after(async () => {
  await postgres.release();
  await redis.release();
});

describe('the conference system scaled out (PostgreSQL + Redis, two workers, a web process)', {
  skip: postgres.skip ?? redis.skip,
}, () => {
  scenarios(distributed(postgres, redis));

  test('the web process counts the workers alive', async () => {
    const { system, stop } = await distributed(postgres, redis)();
    try {
      assert.equal(await system.liveWorkers(), 2);
    } finally {
      await stop();
    }
  });
});
