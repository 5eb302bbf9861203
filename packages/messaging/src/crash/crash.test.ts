/**
 * At-least-once delivery plus the inbox gives exactly-once effects, whatever kills the consumers: 10,000 messages
 * through each durable backend while worker processes are SIGKILLed at random (and replaced).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { postgresForSuite, redisForSuite } from '@stratus/testkit';
import { crashAndCheck } from './harness.js';

describe('crash test on SQLite: SIGKILLed consumers, exactly-once effects', () => {
  it('takes effect exactly once for each of 10,000 messages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stratus-crash-sqlite-'));
    try {
      await crashAndCheck('sqlite', `sqlite:${join(dir, 'queue.db')}`, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const pg = await postgresForSuite('messaging crash');

describe('crash test on PostgreSQL: SIGKILLed consumers, exactly-once effects', { skip: pg.skip }, () => {
  after(() => pg.release());
  it('takes effect exactly once for each of 10,000 messages', async () => {
    await crashAndCheck('postgres', pg.url as string, 2);
  });
});

const redis = await redisForSuite('messaging crash');

describe('crash test on Redis: SIGKILLed consumers, exactly-once effects', { skip: redis.skip }, () => {
  after(() => redis.release());
  it('takes effect exactly once for each of 10,000 messages', async () => {
    await crashAndCheck('redis', `${redis.url}?prefix=${encodeURIComponent(redis.keyPrefix as string)}`, 3);
  });
});
