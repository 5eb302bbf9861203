/**
 * At-least-once delivery plus the inbox gives exactly-once effects, whatever kills the consumers: 10,000 messages
 * through a durable backend while worker processes are SIGKILLed at random (and replaced). One file per backend, so
 * each runs within the test runner's per-file time limit.
 */
import { after, describe, it } from 'node:test';
import { redisForSuite } from '@stratus/testkit';
import { crashAndCheck } from './harness.js';

const redis = await redisForSuite('messaging crash');

describe('crash test on Redis: SIGKILLed consumers, exactly-once effects', { skip: redis.skip }, () => {
  after(() => redis.release());
  it('takes effect exactly once for each of 10,000 messages', async () => {
    await crashAndCheck('redis', `${redis.url}?prefix=${encodeURIComponent(redis.keyPrefix as string)}`, 3);
  });
});
