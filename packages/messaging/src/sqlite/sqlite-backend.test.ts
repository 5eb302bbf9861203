import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startWorkerThread } from '@stratus/core';
import { openSqlite, type SqliteDriverName, sqliteDriverAvailable } from '@stratus/sql';
import { type ChildHandle, countStatementRuns, runChild } from '@stratus/testkit';
import type { QueueSettings } from '../backend.js';
import { messageBackendContract } from '../message-backend.contract.js';
import { DEFAULT_QUEUE_SETTINGS } from '../options.js';
import { MESSAGING_MIGRATIONS } from './schema.js';
import { BackendClosedError, SqliteMessageBackend } from './sqlite-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-sqlite-backend-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
let files = 0;
const freshPath = () => join(directory, `test-${++files}.db`);

for (const driver of ['node:sqlite', 'better-sqlite3'] as const satisfies SqliteDriverName[]) {
  const available = sqliteDriverAvailable(driver);
  if (available !== true) {
    describe(`MessageBackend contract: sqlite (${driver})`, { skip: available }, () => {});
    continue;
  }
  messageBackendContract(
    `sqlite (${driver})`,
    async () => new SqliteMessageBackend({ path: freshPath(), driver }),
    {
      reopen: async (closed) =>
        new SqliteMessageBackend({ path: (closed as SqliteMessageBackend).database.path, driver }),
    },
  );
}

const settings: QueueSettings = { ...DEFAULT_QUEUE_SETTINGS, duplicateWindowMs: 60_000 };
const T0 = 1_750_000_000_000;
const body = (text: string) => new TextEncoder().encode(text);
const worker = new URL('./fixtures/sqlite-worker.ts', import.meta.url);
const isType = (type: string) => (message: unknown) => (message as { type?: string }).type === type;

async function withChildren<T>(children: ChildHandle[], run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } finally {
    await Promise.all(children.map((child) => child.stop()));
  }
}

describe('SQLite message backend', () => {
  it('keeps messages, dead letters and session state across a reopen', async () => {
    const path = freshPath();
    const first = new SqliteMessageBackend({ path });
    await first.putQueue('orders', { ...settings, sessions: true });
    await first.send('orders', [{ id: 'a', body: body('kept'), sessionId: 'S', headers: { k: 'v' } }], T0);
    await first.send('orders', [{ id: 'b', body: body('dead') }], T0);
    await first.setSessionState('orders', 'S', body('state'));
    const { messages } = await first.receive('orders', { max: 2, lockMs: 1000, now: T0 });
    await first.deadLetter('orders', messages[1]?.lockToken as string, 'bad', 'why', T0);
    await first.close();

    const second = new SqliteMessageBackend({ path });
    try {
      assert.deepEqual(await second.getQueue('orders'), { ...settings, sessions: true });
      const [kept] = await second.peek('orders', { limit: 10 });
      assert.equal(kept?.id, 'a');
      assert.equal(kept?.state, 'locked');
      assert.deepEqual(kept?.headers, { k: 'v' });
      assert.equal((await second.listDeadLetters('orders', { limit: 10 }))[0]?.deadLetterDescription, 'why');
      assert.equal(new TextDecoder().decode(await second.getSessionState('orders', 'S')), 'state');
      // The lock taken before the reopen still counts: redelivery only after it expires.
      assert.deepEqual(
        (await second.receive('orders', { max: 5, lockMs: 1000, now: T0 + 999 })).messages,
        [],
      );
      const again = await second.receive('orders', { max: 5, lockMs: 1000, now: T0 + 1000 });
      assert.deepEqual(
        again.messages.map((m) => [m.id, m.deliveryCount]),
        [['a', 2]],
      );
    } finally {
      await second.close();
    }
  });

  it('never reuses a sequence of a queue, even after its highest message is completed or purged', async () => {
    const path = freshPath();
    const backend = new SqliteMessageBackend({ path });
    try {
      await backend.putQueue('q', settings);
      const [first] = await backend.send('q', [{ id: 'a', body: body('a') }], T0);
      const { messages } = await backend.receive('q', { max: 1, lockMs: 1000, now: T0 });
      await backend.complete('q', [messages[0]?.lockToken as string], T0);
      const [second] = await backend.send('q', [{ id: 'b', body: body('b') }], T0);
      assert.ok((second?.sequence as number) > (first?.sequence as number));
      const { messages: more } = await backend.receive('q', { max: 1, lockMs: 1000, now: T0 });
      await backend.deadLetter('q', more[0]?.lockToken as string, 'x', undefined, T0);
      assert.equal(await backend.purgeDeadLetters('q', undefined, T0), 1);
      const [third] = await backend.send('q', [{ id: 'c', body: body('c') }], T0);
      assert.ok((third?.sequence as number) > (second?.sequence as number));
    } finally {
      await backend.close();
    }
  });

  it('forgets expired duplicate ids as sends go, so the table stays bounded', async () => {
    const backend = new SqliteMessageBackend({ path: freshPath() });
    try {
      await backend.putQueue('q', { ...settings, duplicateWindowMs: 1000 });
      for (let round = 0; round < 10; round++) {
        const batch = Array.from({ length: 100 }, (_, i) => ({ id: `${round}-${i}`, body: body('x') }));
        await backend.send('q', batch, T0 + round * 1000);
      }
      const { ids } = backend.database.prepare('SELECT count(*) AS ids FROM stratus_duplicates').get<{
        ids: number;
      }>() as { ids: number };
      assert.ok(ids <= 400, `${ids} ids kept; the window holds 100`);
      assert.ok(ids >= 100);
    } finally {
      await backend.close();
    }
  });

  it('commits the sends of one turn together unless told not to, each still accepted or refused on its own', async () => {
    for (const groupCommit of [undefined, false]) {
      const backend = new SqliteMessageBackend({
        path: freshPath(),
        ...(groupCommit === undefined ? {} : { groupCommit }),
      });
      try {
        await backend.putQueue('q', settings);
        const commits = countStatementRuns(backend.database, 'COMMIT');
        // 20 producers at once; the last repeats the first's id, and a duplicate within one commit is still refused.
        const ids = [...Array.from({ length: 19 }, (_, i) => `m-${i}`), 'm-0'];
        const outcomes = await Promise.all(ids.map((id) => backend.send('q', [{ id, body: body(id) }], T0)));
        assert.deepEqual(
          outcomes.map(([outcome]) => outcome?.accepted),
          [...Array.from({ length: 19 }, () => true), false],
        );
        assert.equal(commits.count, groupCommit === false ? 20 : 1, `groupCommit ${groupCommit}`);
        assert.equal((await backend.stats('q', T0)).length, 19);
      } finally {
        await backend.close();
      }
    }
  });

  it('shares a database it was given and leaves it open on close', async () => {
    const database = openSqlite(freshPath());
    try {
      const backend = new SqliteMessageBackend({ database });
      await backend.putQueue('q', settings);
      await backend.close();
      await assert.rejects(backend.listQueues(), BackendClosedError);
      assert.ok(database.isOpen);
      const other = new SqliteMessageBackend({ database });
      assert.deepEqual(await other.listQueues(), ['q']);
      await other.close();
    } finally {
      database.close();
    }
  });

  it('wakes a watcher on another backend of the same file at once', async () => {
    const path = freshPath();
    const watching = new SqliteMessageBackend({ path, watchIntervalMs: 60_000 });
    const sending = new SqliteMessageBackend({ path });
    try {
      await sending.putQueue('q', settings);
      let stop = () => {};
      const woken = new Promise<void>((resolve) => {
        stop = watching.watch('q', resolve);
      });
      await sending.send('q', [{ id: 'a', body: body('a') }], T0);
      await woken;
      stop();
    } finally {
      await Promise.all([watching.close(), sending.close()]);
    }
  });

  it('creates the schema once when two processes open a fresh file together', async () => {
    const path = freshPath();
    const children = [0, 1].map(() => runChild(worker, { args: [path, 'open', 'shared'] }));
    await withChildren(children, async () => {
      await Promise.all(children.map((child) => child.nextMessage(isType('ready'), 30_000)));
      for (const child of children) child.send({ go: true });
      await Promise.all(children.map((child) => child.nextMessage(isType('done'), 30_000)));
    });
    const backend = new SqliteMessageBackend({ path });
    try {
      const versions = backend.database.prepare('SELECT component, version FROM stratus_schema').all();
      assert.deepEqual(
        versions.map((row) => ({ ...row })),
        [{ component: 'messaging', version: MESSAGING_MIGRATIONS.length }],
      );
      assert.equal((await backend.stats('shared', Date.now())).length, 2);
    } finally {
      await backend.close();
    }
  });

  it('two processes competing for one queue get every message exactly once', async (t) => {
    const path = freshPath();
    const total = 2000;
    const backend = new SqliteMessageBackend({ path });
    await backend.putQueue('work', settings);
    await backend.send(
      'work',
      Array.from({ length: total }, (_, i) => ({ id: `m${i}`, body: body(`m${i}`) })),
      Date.now(),
    );
    const children = [0, 1].map(() => runChild(worker, { args: [path, 'consume', 'work', '7'] }));
    const reports = await withChildren(children, async () => {
      await Promise.all(children.map((child) => child.nextMessage(isType('ready'), 30_000)));
      for (const child of children) child.send({ go: true });
      // Each holds a locked first batch before either goes on: both take part, whatever the scheduling.
      await Promise.all(children.map((child) => child.nextMessage(isType('first'), 30_000)));
      for (const child of children) child.send({ next: true });
      return Promise.all(
        children.map((child) => child.nextMessage<{ ids: string[] }>(isType('done'), 30_000)),
      );
    });
    try {
      t.diagnostic(`messages per process: ${reports.map((report) => report.ids.length).join(' / ')}`);
      const all = reports.flatMap((report) => report.ids);
      assert.equal(all.length, total, 'no message delivered twice');
      assert.equal(new Set(all).size, total, 'none lost');
      assert.ok(
        reports.every((report) => report.ids.length > 0),
        `both processes took part (${reports.map((r) => r.ids.length).join(' / ')})`,
      );
      assert.equal((await backend.stats('work', Date.now())).length, 0);
    } finally {
      await backend.close();
    }
  });

  it('redelivers the messages of a SIGKILLed consumer once their locks expire', async () => {
    const path = freshPath();
    const backend = new SqliteMessageBackend({ path });
    try {
      await backend.putQueue('q', settings);
      await backend.send(
        'q',
        ['a', 'b', 'c'].map((id) => ({ id, body: body(id) })),
        T0,
      );
      const child = runChild(worker, { args: [path, 'hold', 'q', '2', '1000', String(T0)] });
      const holding = await withChildren([child], async () => {
        const report = await child.nextMessage<{ ids: string[] }>(isType('holding'), 30_000);
        child.kill('SIGKILL');
        await child.exited;
        return report.ids;
      });
      assert.deepEqual(holding, ['a', 'b']);
      const before = await backend.receive('q', { max: 5, lockMs: 1000, now: T0 + 999 });
      assert.deepEqual(
        before.messages.map((m) => m.id),
        ['c'],
      );
      const after = await backend.receive('q', { max: 5, lockMs: 1000, now: T0 + 1000 });
      assert.deepEqual(
        after.messages.map((m) => [m.id, m.deliveryCount]),
        [
          ['a', 2],
          ['b', 2],
        ],
      );
    } finally {
      await backend.close();
    }
  });

  it('wakes a watcher in another thread of this process at once, not at its next poll', async () => {
    const path = freshPath();
    const watching = new SqliteMessageBackend({ path, watchIntervalMs: 60_000 });
    try {
      await watching.putQueue('q', settings);
      let stop = () => {};
      const woken = new Promise<void>((resolve) => {
        stop = watching.watch('q', resolve);
      });
      const thread = startWorkerThread(new URL('./fixtures/sqlite-sender-thread.ts', import.meta.url), {
        workerData: { path, queue: 'q' },
      });
      const [sent] = (await once(thread, 'message')) as [{ type: string }];
      assert.equal(sent.type, 'sent');
      // The poll is a minute away: only the thread's wake-up can end this wait in time.
      const outcome = await Promise.race([
        woken.then(() => 'woken'),
        new Promise((resolve) => setTimeout(resolve, 10_000, 'not woken within 10 s')).then(String),
      ]);
      assert.equal(outcome, 'woken');
      stop();
      await once(thread, 'exit');
    } finally {
      await watching.close();
    }
  });

  it('wakes a watcher in another process within its poll interval', async () => {
    const path = freshPath();
    const backend = new SqliteMessageBackend({ path });
    try {
      await backend.putQueue('q', settings);
      await backend.putQueue('other', settings);
      const child = runChild(worker, { args: [path, 'watch', 'q'] });
      await withChildren([child], async () => {
        await child.nextMessage(isType('ready'), 30_000);
        await backend.send('other', [{ id: 'elsewhere', body: body('x') }], T0);
        await new Promise((resolve) => setTimeout(resolve, 150));
        assert.equal(
          child.messages.filter(isType('woken')).length,
          0,
          'a send to another queue wakes nobody',
        );
        const sentAt = performance.now();
        await backend.send('q', [{ id: 'a', body: body('a') }], T0);
        await child.nextMessage(isType('woken'), 5_000);
        assert.ok(performance.now() - sentAt < 1000);
      });
    } finally {
      await backend.close();
    }
  });
});
