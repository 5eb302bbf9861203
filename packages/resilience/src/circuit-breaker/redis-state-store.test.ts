import { after, before, describe } from 'node:test';
import { redisForSuite } from '@stratus/testkit';
import { Redis } from 'ioredis';
import { circuitStateStoreContract, type StorePair, tracked } from './circuit-state-store.contract.js';
import { RedisCircuitStateStore } from './redis-state-store.js';

const redis = await redisForSuite('circuit-state-store');

describe('circuit state store contract: redis', { skip: redis.skip }, () => {
  const clients: Redis[] = [];
  let pair: StorePair;
  const subscriptions: (() => Promise<void>)[] = [];
  before(() => {
    const client = () => {
      const c = new Redis(redis.url ?? '', { maxRetriesPerRequest: 1 });
      clients.push(c);
      return c;
    };
    const keyPrefix = `${redis.keyPrefix}circuit:`;
    pair = {
      a: tracked(subscriptions, new RedisCircuitStateStore({ client: client(), keyPrefix })),
      b: tracked(subscriptions, new RedisCircuitStateStore({ client: client(), keyPrefix })),
    };
  });
  after(async () => {
    for (const off of subscriptions) await off();
    await redis.release();
    for (const c of clients) c.disconnect();
  });
  circuitStateStoreContract(() => pair);
});
