/**
 * The crash test with the server restarted mid-run: producers and consumers reconnect on their own (the client's
 * transient retry for sends and settles, the consumers' receive loops, the backends' wake-up connections), and no
 * acknowledged message is lost. Each backend gets a server of its own, since the restart cuts everyone off.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  findPostgresBinaries,
  findRedisServer,
  type PostgresServer,
  type RedisServer,
  startPostgres,
  startRedis,
} from '@stratus/testkit';
import { type CrashReport, crashAndCheck } from './harness.js';

const DOWNTIME_MS = 1500;

/** A server of this file's own, or why there is none (under CI, none is an error). */
async function ownServer<T>(
  label: string,
  found: string | true,
  start: () => Promise<T>,
): Promise<{ server: T; skip: false } | { server: undefined; skip: string }> {
  const ci = !['', '0', 'false'].includes((process.env.CI ?? '').toLowerCase());
  try {
    if (found !== true) throw new Error(found);
    return { server: await start(), skip: false };
  } catch (error) {
    const reason = `${label} unavailable: ${error instanceof Error ? error.message : String(error)}`;
    if (ci) throw new Error(`${reason} (CI=true: servers are required)`);
    return { server: undefined, skip: reason };
  }
}

// The parent reads the queue's settings for every send (settingsCacheMs 0), so a send issued while the server is
// down needs the server for that too.

/** Restarts the server half a second into the second half, recording when it went down and came back. */
function restartMidRun(server: PostgresServer | RedisServer) {
  const window = { downAt: 0, upAt: 0 };
  const disrupt = async () => {
    await delay(500);
    window.downAt = Date.now();
    await server.restart({ downtimeMs: DOWNTIME_MS });
    window.upAt = Date.now();
  };
  return { window, disrupt };
}

/**
 * Some batch was sent while the server was down and acknowledged only after it was back, and the worker that was
 * never killed went on consuming after the restart.
 */
function assertRodeOutRestart(report: CrashReport, window: { downAt: number; upAt: number }) {
  assert.ok(window.upAt > window.downAt, 'the server was restarted');
  assert.ok(
    report.sends.some((send) => send.startedAt >= window.downAt && send.endedAt >= window.upAt),
    'a send issued while the server was down went through once it was back',
  );
  const [survivor] = report.spared;
  assert.ok(
    survivor?.lastEffectAt !== undefined && survivor.lastEffectAt > window.upAt,
    'the worker that was never killed consumed again after the restart',
  );
  console.log(
    `  restart: down ${window.upAt - window.downAt} ms; the survivor saw ${survivor.receiveFailures} failed ` +
      `receives and took effect until ${survivor.lastEffectAt - window.upAt} ms after the restart`,
  );
}

const pgBinaries = findPostgresBinaries();
const pg = await ownServer('PostgreSQL', 'reason' in pgBinaries ? pgBinaries.reason : true, () =>
  startPostgres(),
);

describe('crash test on PostgreSQL with the server restarted mid-run', { skip: pg.skip }, () => {
  after(() => pg.server?.stop());
  it('takes effect exactly once for each of 10,000 messages; everyone reconnects', async () => {
    const server = pg.server as PostgresServer;
    const { window, disrupt } = restartMidRun(server);
    const report = await crashAndCheck('postgres, restarted', server.url, 4, {
      disrupt,
      spared: 1,
      settingsCacheMs: 0,
    });
    assertRodeOutRestart(report, window);
  });
});

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
