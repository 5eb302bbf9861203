import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { type ChildHandle, postgresForSuite, runChild, waitUntil } from '@stratus/testkit';
import pg from 'pg';
import { Messaging } from './messaging.js';
import { PostgresMessageBackend } from './postgres/postgres-backend.js';
import { type Closable, closeOnSignals, type ShutdownOutcome, ShutdownTimeoutError } from './shutdown.js';

/** A closable that records its calls and takes `ms` (never settles when Infinity). */
function closable(log: string[], name: string, ms = 0, error?: Error): Closable {
  return {
    async close(options) {
      log.push(`${name}:${options?.timeoutMs}`);
      if (ms === Number.POSITIVE_INFINITY) await new Promise(() => {});
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      if (error) throw error;
    },
  };
}

/**
 * Installs closeOnSignals on SIGHUP without exiting, signals, and resolves with the outcome. Not SIGUSR2: under
 * Node 24 emitting it also wrote a diagnostic report (the report signal) into the working directory.
 */
async function shutDownWith(closables: Closable[], options: { timeoutMs: number; hardStopAfterMs?: number }) {
  let outcome: ShutdownOutcome | undefined;
  const remove = closeOnSignals(closables, {
    ...options,
    signals: ['SIGHUP'],
    exit: false,
    onClosed: (o) => {
      outcome = o;
    },
  });
  try {
    process.emit('SIGHUP', 'SIGHUP');
    await waitUntil(() => outcome !== undefined, 'the shutdown ends');
    return outcome as ShutdownOutcome;
  } finally {
    remove();
  }
}

describe('closeOnSignals', () => {
  it('closes everything in order on the first signal, sharing one deadline', async () => {
    const log: string[] = [];
    const outcome = await shutDownWith([closable(log, 'a', 60), closable(log, 'b')], { timeoutMs: 1000 });
    assert.equal(outcome.signal, 'SIGHUP');
    assert.equal(outcome.error, undefined);
    // The first gets the whole deadline, less the time it took to get there.
    const [, first] = (log[0] as string).split(':');
    assert.ok(Number(first) <= 1000 && Number(first) >= 950, `a got ${first} ms of the deadline`);
    const [, rest] = (log[1] as string).split(':');
    assert.ok(Number(rest) <= 1000 - 50 && Number(rest) > 0, `b got ${rest} ms of the deadline`);
  });

  it('goes on closing after a failure and reports the first error', async () => {
    const log: string[] = [];
    const boom = new Error('boom');
    const outcome = await shutDownWith(
      [closable(log, 'a', 0, boom), closable(log, 'b', 0, new Error('later')), closable(log, 'c')],
      { timeoutMs: 100 },
    );
    assert.equal(outcome.error, boom);
    assert.deepEqual(
      log.map((entry) => entry.split(':')[0]),
      ['a', 'b', 'c'],
    );
  });

  it('stops waiting for a close that hangs past the deadline', async () => {
    const log: string[] = [];
    const outcome = await shutDownWith([closable(log, 'stuck', Number.POSITIVE_INFINITY)], {
      timeoutMs: 20,
      hardStopAfterMs: 20,
    });
    assert.ok(outcome.error instanceof ShutdownTimeoutError);
  });

  it('listens on SIGTERM and SIGINT by default; the returned function removes the handlers', () => {
    const before = ['SIGTERM', 'SIGINT'].map((s) => process.listenerCount(s));
    const remove = closeOnSignals([], { exit: false });
    assert.deepEqual(
      ['SIGTERM', 'SIGINT'].map((s) => process.listenerCount(s)),
      before.map((n) => n + 1),
    );
    remove();
    assert.deepEqual(
      ['SIGTERM', 'SIGINT'].map((s) => process.listenerCount(s)),
      before,
    );
  });

  it('refuses invalid options', () => {
    assert.throws(() => closeOnSignals([{} as Closable]), InvalidOptionsError);
    assert.throws(() => closeOnSignals([], { signals: [] }), InvalidOptionsError);
    assert.throws(() => closeOnSignals([], { signals: ['SIGNOPE' as NodeJS.Signals] }), InvalidOptionsError);
    assert.throws(() => closeOnSignals([], { timeoutMs: -1 }), InvalidOptionsError);
  });
});

const suite = await postgresForSuite('messaging shutdown');

describe('a PostgreSQL worker shut down by SIGTERM', { skip: suite.skip }, () => {
  const worker = new URL('./crash/fixtures/shutdown-worker.ts', import.meta.url);
  const url = suite.url as string;
  let messaging: Messaging;
  let pool: pg.Pool;

  before(async () => {
    messaging = new Messaging({
      backend: new PostgresMessageBackend({ connectionString: url, poolSize: 2 }),
    });
    pool = new pg.Pool({ connectionString: url, max: 1 });
    await pool.query('CREATE TABLE effects (id text NOT NULL)');
  });
  after(async () => {
    await messaging?.close();
    await pool?.end();
    await suite.release();
  });
  beforeEach(async () => {
    await messaging.deleteQueue('work');
    await pool.query('TRUNCATE effects');
    await messaging.createQueue('work', { lockDurationMs: 30_000 });
    await messaging.queue('work').sendBatch(['m0', 'm1', 'm2'].map((id) => ({ id, body: id })));
  });

  const start = (handlerMs: number, shutdownMs: number): ChildHandle =>
    runChild(worker, {
      env: { DATABASE_URL: url, HANDLER_MS: String(handlerMs), SHUTDOWN_MS: String(shutdownMs) },
      lifetimeMs: 30_000,
    });
  const started = (child: ChildHandle) =>
    child.nextMessage<{ id: string; deliveryCount: number }>(
      (m) => (m as { type?: string }).type === 'started',
      15_000,
    );
  const effects = async () => (await pool.query('SELECT id FROM effects ORDER BY id')).rows.map((r) => r.id);
  const state = async () =>
    (await messaging.queue('work').peek()).map((m) => ({
      id: m.id,
      state: m.state,
      deliveries: m.deliveryCount,
    }));

  it('finishes the message in hand, takes no new one, and exits 0', async () => {
    const child = start(1500, 10_000);
    assert.deepEqual(await started(child), { type: 'started', id: 'm0', deliveryCount: 1 });
    child.kill('SIGTERM');
    assert.deepEqual(await child.exited, { code: 0, signal: null });
    const types = child.messages.map((m) => `${(m as { type: string }).type}:${(m as { id?: string }).id}`);
    assert.deepEqual(types, [
      'ready:undefined',
      'started:m0',
      'closing:undefined',
      'finished:m0',
      'closed:undefined',
    ]);
    assert.equal((child.messages.at(-1) as { error: unknown }).error, null);
    assert.deepEqual(await effects(), ['m0']);
    assert.deepEqual(await state(), [
      { id: 'm1', state: 'available', deliveries: 0 },
      { id: 'm2', state: 'available', deliveries: 0 },
    ]);
  });

  it('aborts a handler that outlives the deadline and gives its message back', async () => {
    const child = start(60_000, 300);
    await started(child);
    const signalledAt = performance.now();
    child.kill('SIGTERM');
    assert.deepEqual(await child.exited, { code: 0, signal: null });
    const tookMs = performance.now() - signalledAt;
    assert.ok(tookMs < 5_000, `exited ${Math.round(tookMs)} ms after SIGTERM`);
    assert.ok(child.messages.some((m) => (m as { type: string }).type === 'aborted'));
    assert.deepEqual(await effects(), []);
    assert.deepEqual(await state(), [
      { id: 'm0', state: 'available', deliveries: 1 },
      { id: 'm1', state: 'available', deliveries: 0 },
      { id: 'm2', state: 'available', deliveries: 0 },
    ]);
    // Given back now, it ranks behind the two that waited since they were sent.
    const again = await messaging.queue('work').receive({ max: 3 });
    assert.deepEqual(
      again.map((m) => [m.id, m.deliveryCount]),
      [
        ['m1', 1],
        ['m2', 1],
        ['m0', 2],
      ],
    );
  });

  it('exits at once with 143 on a second SIGTERM', async () => {
    const child = start(60_000, 60_000);
    await started(child);
    child.kill('SIGTERM');
    // Once the first signal is being handled (closing waits for the handler), the second one cuts it short.
    await child.nextMessage((m) => (m as { type?: string }).type === 'closing');
    child.kill('SIGTERM');
    assert.deepEqual(await child.exited, { code: 143, signal: null });
    assert.deepEqual(await effects(), []);
  });
});
