/**
 * Pieces of the crash tests with the server restarted mid-run (restart-*.test.ts): producers and consumers reconnect
 * on their own (the client's transient retry for sends and settles, the consumers' receive loops, the backends'
 * wake-up connections), and no acknowledged message is lost. Each backend gets a server of its own, since the
 * restart cuts everyone off.
 */
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import type { PostgresServer, RedisServer } from '@stratus/testkit';
import type { CrashReport } from './harness.js';

const DOWNTIME_MS = 1500;

/** A server of this file's own, or why there is none (under CI, none is an error). */
export async function ownServer<T>(
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
export function restartMidRun(server: PostgresServer | RedisServer) {
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
export function assertRodeOutRestart(report: CrashReport, window: { downAt: number; upAt: number }) {
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
