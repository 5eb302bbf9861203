/** The crash test on Redis with the server restarted mid-run (see restart-harness.ts). */
import { after, describe, it } from 'node:test';
import { findRedisServer, type RedisServer, startRedis } from '@stratus/testkit';
import { crashAndCheck } from './harness.js';
import { assertRodeOutRestart, ownServer, restartMidRun } from './restart-harness.js';

const redisBinary = findRedisServer();
const redis = await ownServer('Redis', typeof redisBinary === 'string' ? true : redisBinary.reason, () =>
  startRedis({ persistent: true }),
);

describe('crash test on Redis with the server restarted mid-run', { skip: redis.skip }, () => {
  after(() => redis.server?.stop());
  it('takes effect exactly once for each of 10,000 messages; everyone reconnects', async () => {
    const server = redis.server as RedisServer;
    const { window, disrupt } = restartMidRun(server);
    const report = await crashAndCheck('redis, restarted', server.url, 5, {
      disrupt,
      spared: 1,
      settingsCacheMs: 0,
    });
    assertRodeOutRestart(report, window);
  });
});
