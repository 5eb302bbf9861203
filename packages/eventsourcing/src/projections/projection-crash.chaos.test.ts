/**
 * A projection runner SIGKILLed in the middle of a batch, on SQLite and on PostgreSQL: the half-applied batch never
 * shows, another runner takes the view over once the dead one's lease expires, and the view it completes equals a
 * rebuild from scratch (every event applied exactly once).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/sql';
import { postgresForSuite, runChild } from '@stratus/testkit';
import pg from 'pg';
import { EventStore } from '../event-store.js';
import { PostgresEventStoreBackend } from '../postgres/postgres-event-store.js';
import { SqliteEventStoreBackend } from '../sqlite/sqlite-event-store.js';
import {
  dumpPostgresCrashView,
  dumpSqliteCrashView,
  postgresCrashView,
  sqliteCrashView,
} from './fixtures/crash-view.js';
import { PostgresProjectionTarget } from './postgres-projection-target.js';
import type { Projection } from './projection.js';
import { ProjectionRunner } from './projection-runner.js';
import { SqliteProjectionTarget } from './sqlite-projection-target.js';
import type { ProjectionTarget } from './target.js';

const RUNNER = new URL('./fixtures/runner-process.ts', import.meta.url);
const STREAMS = 30;
const EVENTS_PER_STREAM = 20;
/** Inside the sixth batch of 50 (positions 251-300). */
const STALL_AT = 275;

const suite = await postgresForSuite('eventsourcing-projection-crash');
const directory = mkdtempSync(join(tmpdir(), 'stratus-projection-crash-'));
after(async () => {
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
  await suite.release();
});

async function appendEvents(store: EventStore): Promise<number> {
  for (let s = 0; s < STREAMS; s++) {
    const events = Array.from({ length: EVENTS_PER_STREAM }, (_, i) => ({
      type: 'Paid',
      data: { amount: s * 100 + i },
    }));
    await store.appendToStream(`account-${s}`, events);
  }
  return store.headPosition();
}

/** Kills the runner process mid-batch, then finishes the view in this process and rebuilds it as version 2. */
async function crashAndRecover<Tx>(
  store: EventStore,
  target: ProjectionTarget<Tx>,
  view: Projection<Tx>,
  env: Record<string, string>,
  dump: (version: number) => Promise<unknown[][]>,
): Promise<void> {
  const head = await appendEvents(store);
  assert.equal(head, STREAMS * EVENTS_PER_STREAM);
  const child = runChild(RUNNER, { env: { ...env, STALL_AT: String(STALL_AT) }, lifetimeMs: 30_000 });
  await child.nextMessage((m) => (m as { stalled?: number }).stalled === STALL_AT, 20_000);
  const [midway] = await target.versions(view.name);
  assert.equal(midway?.position, 250, 'five whole batches committed, the sixth is in progress');
  assert.equal((await dump(1))[0]?.length, 250, 'none of the batch in progress is visible');
  child.kill('SIGKILL');
  assert.equal((await child.exited).signal, 'SIGKILL');

  const successor = new ProjectionRunner(store, target, view, { leaseMs: 1000, pollIntervalMs: 50 });
  const running = successor.start();
  await successor.caughtUp;
  await successor.stop();
  await running;
  const rebuild = new ProjectionRunner(store, target, { ...view, version: 2 }, { pollIntervalMs: 50 });
  const rebuilding = rebuild.start();
  await rebuild.caughtUp;
  await rebuild.stop();
  await rebuilding;

  const [recovered, rebuilt] = [await dump(1), await dump(2)];
  assert.equal(recovered[0]?.length, head, 'every event applied once');
  assert.equal(recovered[1]?.length, STREAMS);
  assert.deepEqual(recovered, rebuilt, 'the recovered view equals a full rebuild');
}

describe('a projection runner killed mid-batch', () => {
  it('SQLite: the view is completed by the next runner and matches a full rebuild', async () => {
    const path = join(directory, 'crash.db');
    const database = openSqlite(path);
    const store = new EventStore({ backend: new SqliteEventStoreBackend({ database, watchIntervalMs: 20 }) });
    await crashAndRecover(
      store,
      new SqliteProjectionTarget({ database }),
      sqliteCrashView(),
      { KIND: 'sqlite', TARGET: path },
      async (version) => dumpSqliteCrashView(database, version),
    );
    await store.close();
    database.close();
  });

  it('PostgreSQL: the view is completed by the next runner and matches a full rebuild', {
    skip: suite.skip,
  }, async () => {
    const schema = 'projection_crash';
    const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
    pool.on('error', () => {});
    const store = new EventStore({ backend: new PostgresEventStoreBackend({ pool, schema }) });
    try {
      await crashAndRecover(
        store,
        new PostgresProjectionTarget({ pool, schema }),
        postgresCrashView(schema),
        { KIND: 'postgres', TARGET: suite.url as string, SCHEMA: schema },
        (version) => dumpPostgresCrashView(pool, schema, version),
      );
    } finally {
      await store.close();
      await pool.end();
    }
  });
});
