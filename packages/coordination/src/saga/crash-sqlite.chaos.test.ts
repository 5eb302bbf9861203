/**
 * Sagas under injected failures and real crashes: engine processes on one SQLite file are SIGKILLed at random
 * effects while sagas run and compensate; the next process resumes them (recovery scan). In the end every saga
 * is completed, fully compensated or waiting for an operator with a correct alert, every call of a step used the
 * same idempotency key (so the service applied each effect once), and each saga's account matches its state.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/sql';
import { runChild } from '@stratus/testkit';
import {
  applyEffect,
  DELTAS,
  STEP_NAMES,
  type StepName,
  transferInput,
  transferSaga,
} from './fixtures/transfer-saga.js';
import type { SagaOperatorAlert } from './operator-alert.js';
import { SagaEngine } from './saga-engine.js';
import { SqliteSagaStore } from './sqlite-saga-store.js';

const SAGAS = 60;
const CRASHES = 5;
const directory = mkdtempSync(join(tmpdir(), 'stratus-saga-crash-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

/** A small seeded generator, so a failing run can be repeated with its seed. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Message {
  readonly t: string;
  readonly alert?: SagaOperatorAlert;
  readonly resumed?: number;
}

describe('sagas on SQLite with crashes (SIGKILLed engine processes)', () => {
  it('end completed, compensated or waiting for an operator, with every effect applied once', async () => {
    const seed = Number(process.env.SAGA_CRASH_SEED ?? Date.now() % 1_000_000);
    const random = mulberry32(seed);
    const path = join(directory, 'sagas.db');
    const env = { DB_PATH: path, SAGAS: String(SAGAS) };
    const context = `seed ${seed}`;

    let killedMidway = 0;
    let resumedByLaterRuns = 0;
    // A process reports what its recovery resumed once the recovery is over: one killed during it reports nothing.
    const resumedBy = (child: { readonly messages: readonly unknown[] }) =>
      (child.messages.find((m) => (m as Message).t === 'recovered') as Message | undefined)?.resumed ?? 0;
    for (let run = 0; run < CRASHES; run++) {
      const child = runChild(new URL('./fixtures/crash-worker.ts', import.meta.url), {
        env,
        lifetimeMs: 20_000,
      });
      const killAt = 1 + Math.floor(random() * 50);
      let effects = 0;
      const end = await child.nextMessage<Message>(
        (m) => (m as Message).t === 'done' || ((m as Message).t === 'effect' && ++effects >= killAt),
        15_000,
      );
      if (end.t === 'effect') {
        child.kill('SIGKILL');
        assert.equal((await child.exited).signal, 'SIGKILL', context);
        killedMidway++;
      } else {
        await child.exited;
      }
      resumedByLaterRuns += resumedBy(child);
    }
    // The last process runs undisturbed to the end.
    const last = runChild(new URL('./fixtures/crash-worker.ts', import.meta.url), {
      env,
      lifetimeMs: 20_000,
    });
    await last.nextMessage((m) => (m as Message).t === 'done', 15_000);
    assert.equal((await last.exited).code, 0, context);
    resumedByLaterRuns += resumedBy(last);
    assert.ok(killedMidway >= 3, `${context}: at least some processes died mid-work (${killedMidway})`);
    assert.ok(resumedByLaterRuns > 0, `${context}: later processes resumed sagas a crash left behind`);
    const alerts = new Map(
      last.messages
        .filter((m) => (m as Message).t === 'alert')
        .map((m) => [(m as Message).alert?.sagaId, (m as Message).alert] as const),
    );

    const db = openSqlite(path);
    const store = new SqliteSagaStore({ database: db });
    const definition = transferSaga(db);
    const engine = new SagaEngine({ store, definitions: [definition] });
    const keysPerCall = db
      .prepare(
        'SELECT saga_id, step, kind, COUNT(DISTINCT key) AS keys, MIN(key) AS key FROM calls GROUP BY 1, 2, 3',
      )
      .all<{ saga_id: string; step: string; kind: string; keys: number; key: string }>();
    for (const call of keysPerCall) {
      assert.equal(call.keys, 1, `${context}: ${call.saga_id} ${call.step} ${call.kind} used one key`);
      const expected = `${call.saga_id}:${call.step}${call.kind === 'undo' ? ':undo' : ''}`;
      assert.equal(call.key, expected, context);
    }
    const repeated = db
      .prepare('SELECT COUNT(*) AS n FROM (SELECT key FROM calls GROUP BY key HAVING COUNT(*) > 1)')
      .get<{ n: number }>() as { n: number };
    assert.ok(
      repeated.n > 0,
      `${context}: some calls were repeated (retries, resumes), so dedup was exercised`,
    );

    const effectsOf = (sagaId: string) =>
      db
        .prepare('SELECT step, kind FROM effects WHERE saga_id = ?')
        .all<{ step: StepName; kind: string }>(sagaId);
    const balanceOf = (sagaId: string) =>
      db.prepare('SELECT amount FROM balances WHERE saga_id = ?').get<{ amount: number }>(sagaId)?.amount ??
      0;
    const counts = { completed: 0, compensated: 0, 'needs-operator': 0 };

    for (let i = 0; i < SAGAS; i++) {
      const sagaId = `t-${i}`;
      const input = transferInput(i);
      const record = await store.get(sagaId);
      assert.ok(record, `${context}: ${sagaId} exists`);
      const effects = effectsOf(sagaId);
      const done = effects.filter((e) => e.kind === 'do').map((e) => e.step);
      const undone = effects.filter((e) => e.kind === 'undo').map((e) => e.step);
      const failAt = input.failAt === undefined ? STEP_NAMES.length : STEP_NAMES.indexOf(input.failAt);
      const expectedDone = STEP_NAMES.slice(0, failAt);
      const where = `${context}: ${sagaId} (${JSON.stringify(input)})`;
      assert.deepEqual(
        done.sort(),
        [...expectedDone].sort(),
        `${where}: exactly the steps before the failure acted`,
      );
      assert.deepEqual(
        record.steps.map((s) => s.name),
        expectedDone,
        `${where}: the log holds them in order`,
      );
      if (input.failAt === undefined) {
        assert.equal(record.status, 'completed', where);
        assert.deepEqual(undone, [], where);
        assert.equal(balanceOf(sagaId), 1111, where);
      } else if (input.undoFailsAt === undefined) {
        assert.equal(record.status, 'compensated', where);
        assert.deepEqual(
          undone.sort(),
          [...expectedDone].sort(),
          `${where}: every completed step undone once`,
        );
        assert.equal(balanceOf(sagaId), 0, where);
      } else {
        assert.equal(record.status, 'needs-operator', where);
        const stuckAt = STEP_NAMES.indexOf(input.undoFailsAt);
        assert.deepEqual(
          undone.sort(),
          expectedDone.slice(stuckAt + 1).sort(),
          `${where}: undone down to the stuck step`,
        );
        const left = expectedDone.slice(0, stuckAt + 1);
        assert.equal(
          balanceOf(sagaId),
          left.reduce((sum, step) => sum + DELTAS[step], 0),
          where,
        );
        const alert = alerts.get(sagaId);
        assert.ok(alert, `${where}: the last process raised its alert again`);
        assert.deepEqual(alert, await engine.alert(sagaId), where);
        assert.deepEqual(alert.input, input, where);
        assert.deepEqual(alert.failure?.step, input.failAt, where);
        assert.deepEqual(
          alert.failedUndos.map((f) => [f.step, f.error.message, f.attempts]),
          [[input.undoFailsAt, `cannot undo ${input.undoFailsAt}`, 3]],
          where,
        );
        assert.deepEqual(
          alert.remaining,
          [...left].reverse().map((step) => [step]),
          where,
        );
        assert.deepEqual(
          alert.completedSteps.map((s) => [s.name, s.result, s.undone !== undefined]),
          expectedDone.map((step, k) => [step, { applied: DELTAS[step] }, k > stuckAt]),
          where,
        );
      }
      counts[record.status as keyof typeof counts]++;
    }
    assert.deepEqual(counts, { completed: 10, compensated: 40, 'needs-operator': 10 }, context);
    assert.equal(alerts.size, 10, `${context}: one alert per saga waiting for an operator`);

    // An operator finishes one by hand: applies the refund the undo could not, marks it resolved, and the engine
    // undoes the rest.
    const stuck = alerts.get('t-5') as SagaOperatorAlert;
    applyEffect(db, { key: 't-5:reserve:undo', sagaId: 't-5', step: 'reserve', kind: 'undo', delta: -10 });
    const finished = await engine.resolveStep(stuck.sagaId, 'reserve', { note: 'refunded by hand' });
    assert.equal(finished.status, 'compensated', context);
    assert.equal(balanceOf('t-5'), 0, context);
    db.close();
  });
});
