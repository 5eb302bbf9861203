/**
 * Pipes and Filters with each filter in a process of its own: 200 messages through A → B → C while B is SIGKILLed
 * mid-run and restarted. Every message reaches the final receiver exactly once, marked by both filters.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite, type SqliteDatabase } from '@stratus/sql';
import { postgresForSuite, waitUntil } from '@stratus/testkit';
import { Messaging } from '../messaging.js';
import { openMessageBackend } from '../open-backend.js';
import { SqliteInbox } from '../outbox/inbox.js';
import { crashPipeline, type Doc } from './fixtures/pipeline.js';
import { messageIds, paced, WorkerPool } from './harness.js';

const FILTER = new URL('./fixtures/filter.ts', import.meta.url);
const MESSAGES = 200;

interface ResultRow {
  correlation_id: string;
  trail: string;
  mark_a: string | null;
  mark_b: string | null;
}

/**
 * The final receiver's database: the inbox table and one row per recorded document (no unique key); and a row per
 * message B took, with its delivery count.
 */
function resultsDatabase(path: string): SqliteDatabase {
  const database = openSqlite(path);
  new SqliteInbox({ database });
  database.exec(`CREATE TABLE results (
    correlation_id TEXT, trail TEXT NOT NULL, mark_a TEXT, mark_b TEXT)`);
  database.exec('CREATE TABLE b_deliveries (message_id TEXT NOT NULL, delivery INTEGER NOT NULL)');
  return database;
}

async function runPipeline(backendUrl: string): Promise<void> {
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'stratus-pipeline-'));
  const results = resultsDatabase(join(dir, 'results.db'));
  const count = () => results.prepare('SELECT count(*) AS n FROM results').get<{ n: number }>()?.n ?? 0;
  const messaging = new Messaging({ backend: openMessageBackend(backendUrl) });
  const filters = Object.fromEntries(
    ['A', 'B', 'C'].map((step) => [
      step,
      new WorkerPool(FILTER, { BACKEND_URL: backendUrl, STEP: step, RESULTS_PATH: results.path }),
    ]),
  ) as Record<'A' | 'B' | 'C', WorkerPool>;
  try {
    const pipeline = crashPipeline(messaging);
    await pipeline.createQueues({ lockDurationMs: 1000, maxDeliveryCount: 100 });
    const ids = messageIds(MESSAGES, 'p');
    const outcomes = await messaging
      .queue<Doc>(pipeline.input)
      .sendBatch(ids.map((id, n) => ({ id, body: { n, trail: [] } })));
    const sentIds = outcomes.map((outcome) => outcome.id);
    for (const pool of Object.values(filters)) pool.start();

    await waitUntil(
      paced(() => count() >= 20),
      'the first documents reach the final receiver',
      30_000,
    );
    const beforeKill = count();
    await filters.B.killOne(() => 0);
    assert.ok(beforeKill < MESSAGES, `B was killed mid-run (${beforeKill} of ${MESSAGES} done)`);

    const queues = pipeline.steps.map((step) => messaging.queue(step.input));
    await waitUntil(
      paced(async () => {
        if (count() < MESSAGES) return false;
        const stats = await Promise.all(queues.map((queue) => queue.stats()));
        return stats.every((s) => s.length === 0 && s.deadLettered === 0);
      }),
      `all ${MESSAGES} documents went through and every queue is empty`,
      30_000,
    );
    const stopped = await Promise.all(Object.values(filters).map((pool) => pool.stop()));
    for (const { exits, stderr } of stopped) {
      assert.deepEqual(exits, [{ code: 0, signal: null }], stderr.join('\n'));
    }

    const rows = results.prepare('SELECT * FROM results').all<ResultRow>();
    assert.equal(rows.length, MESSAGES, 'each document was recorded once');
    assert.deepEqual(rows.map((row) => row.correlation_id).sort(), [...sentIds].sort());
    for (const row of rows) {
      assert.deepEqual(
        { trail: row.trail, a: row.mark_a, b: row.mark_b },
        { trail: 'A>B', a: 'complete', b: 'complete' },
      );
    }
    // Counted where B takes them: a message B had already passed on when killed comes back to B too, but C's
    // inbox records only its first copy, so the results alone may show no repeat.
    const redelivered =
      results
        .prepare('SELECT count(DISTINCT message_id) AS n FROM b_deliveries WHERE delivery > 1')
        .get<{ n: number }>()?.n ?? 0;
    assert.ok(redelivered > 0, 'the kill interrupted B: some of its messages came back');
    console.log(
      `  ${backendUrl.split(':')[0]}: ${MESSAGES} documents in ${Math.round(performance.now() - started)} ms; ` +
        `B killed after ${beforeKill}, ${redelivered} redelivered to B`,
    );
  } finally {
    await Promise.all(Object.values(filters).map((pool) => pool.killAll()));
    await messaging.close();
    results.close();
    rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
  }
}

describe('Pipes and Filters in three processes on SQLite, one of them SIGKILLed', () => {
  it('delivers every message exactly once through A, B and C', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stratus-pipeline-sqlite-'));
    try {
      await runPipeline(`sqlite:${join(dir, 'queues.db')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    }
  });
});

const pg = await postgresForSuite('messaging pipeline crash');

describe('Pipes and Filters in three processes on PostgreSQL, one of them SIGKILLed', {
  skip: pg.skip,
}, () => {
  after(() => pg.release());
  it('delivers every message exactly once through A, B and C', async () => {
    await runPipeline(pg.url as string);
  });
});
