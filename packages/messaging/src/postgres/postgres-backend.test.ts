import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migratePostgres, NotificationListener } from '@stratus/sql';
import { postgresForSuite, waitUntil, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import type { OutgoingMessage, QueueSettings, ReceiveResult } from '../backend.js';
import { messageBackendContract } from '../message-backend.contract.js';
import { DEFAULT_QUEUE_SETTINGS } from '../options.js';
import { topicMatches } from '../routing.js';
import { PostgresMessageBackend } from './postgres-backend.js';
import { migrations } from './schema.js';
import { topicPatternRegex } from './topic-regex.js';

/** The schema version once every migration ran. */
const LATEST = migrations('any').length;

const suite = await postgresForSuite('messaging-postgres');

const settings: QueueSettings = { ...DEFAULT_QUEUE_SETTINGS, duplicateWindowMs: 60_000 };
const T0 = 1_750_000_000_000;
const text = (value: string) => new TextEncoder().encode(value);
const msg = (id: string, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  id,
  body: text(id),
  ...extra,
});

describe('PostgresMessageBackend', { skip: suite.skip }, () => {
  const url = suite.url as string;
  after(() => suite.release());

  const connect = async () => new PostgresMessageBackend({ connectionString: url });
  messageBackendContract('postgres', connect, { reopen: connect });

  describe('on PostgreSQL', () => {
    const pools: pg.Pool[] = [];
    const backends: PostgresMessageBackend[] = [];
    let admin: pg.Pool;

    /** A backend on a pool of its own, as another process would have. */
    function open(schema = 'stratus'): PostgresMessageBackend {
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      pool.on('error', () => {});
      pools.push(pool);
      const backend = new PostgresMessageBackend({ pool, schema });
      backends.push(backend);
      return backend;
    }

    before(() => {
      admin = new pg.Pool({ connectionString: url, max: 2 });
    });
    after(async () => {
      for (const backend of backends) await backend.close();
      for (const pool of pools) await pool.end();
      await admin.end();
    });

    it('hears every notification of a channel with its payload, and a wake-up without one when LISTEN starts', async () => {
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      pool.on('error', () => {});
      pools.push(pool);
      const listener = new NotificationListener(() => pool.connect(), 'stratus_test_payloads');
      const heard: (string | undefined)[] = [];
      const stop = listener.watchAll((payload) => heard.push(payload));
      await listener.opened();
      assert.deepEqual(heard, [undefined], 'woken once LISTEN took effect');
      await admin.query("SELECT pg_notify('stratus_test_payloads', $1)", ['{"a":1}']);
      await admin.query("SELECT pg_notify('stratus_test_other', 'no')");
      await admin.query("SELECT pg_notify('stratus_test_payloads', 'b')");
      await waitUntil(() => heard.length === 3, 'both notifications heard');
      assert.deepEqual(heard, [undefined, '{"a":1}', 'b']);
      stop();
      await admin.query("SELECT pg_notify('stratus_test_payloads', 'c')");
      await admin.query("SELECT pg_notify('stratus_test_payloads', 'd')");
      await listener.close();
      assert.equal(heard.length, 3, 'nothing after stop');
    });

    it('tells a payload watcher when its LISTEN connection is lost, then wakes it when LISTEN is back', async () => {
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      pool.on('error', () => {});
      pools.push(pool);
      const channel = `stratus_test_lost_${process.pid}`;
      const listener = new NotificationListener(() => pool.connect(), channel);
      const heard: (string | undefined)[] = [];
      const stop = listener.watchAll(
        (payload) => heard.push(payload),
        () => heard.push('lost'),
      );
      await listener.opened();
      const { rows } = await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = $1',
        [`LISTEN "${channel}"`],
      );
      assert.equal(rows.length, 1);
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
      await waitUntil(() => heard.length === 3, 'the loss, then LISTEN again', 10_000);
      assert.deepEqual(heard, [undefined, 'lost', undefined]);
      assert.equal(listener.listening, true);
      stop();
      await listener.close();
    });

    it('validates its options', () => {
      assert.throws(() => new PostgresMessageBackend({}), /pool/);
      assert.throws(
        () => new PostgresMessageBackend({ connectionString: url, pool: new pg.Pool() as pg.Pool }),
        /pool/,
      );
      assert.throws(
        () => new PostgresMessageBackend({ connectionString: url, schema: 'Bad-Name' }),
        /schema/,
      );
    });

    it('migrates once when several instances start at the same time', async () => {
      const starting = Array.from({ length: 4 }, () => open('concurrent_migrations'));
      await Promise.all(starting.map((backend) => backend.migrate()));
      const { rows } = await admin.query(
        'SELECT component, version FROM concurrent_migrations.stratus_schema',
      );
      assert.deepEqual(rows, [{ component: 'messaging', version: LATEST }]);
      await (starting[0] as PostgresMessageBackend).putQueue('after-migration', settings);
      assert.deepEqual(await (starting[3] as PostgresMessageBackend).listQueues(), ['after-migration']);
    });

    it('plans the statements of every function it calls once per connection, fresh or upgraded from version 4', async () => {
      const settingsOf = async (schema: string) =>
        (
          await admin.query<{ name: string; config: string[] }>(
            `SELECT p.oid::regprocedure::text AS name, p.proconfig AS config FROM pg_proc p
             WHERE p.pronamespace = $1::regnamespace AND 'enable_seqscan=off' = ANY (p.proconfig)`,
            [schema],
          )
        ).rows;
      await open('generic_fresh').migrate();
      // Version 4 as the previous release made it: its functions without the setting.
      const version4 = migrations('generic_upgraded')
        .slice(0, 4)
        .map((sql) => sql.replaceAll(' SET plan_cache_mode = force_generic_plan', ''));
      await migratePostgres(admin, 'generic_upgraded', 'messaging', version4);
      assert.ok(
        (await settingsOf('generic_upgraded')).every(
          (f) => !f.config.includes('plan_cache_mode=force_generic_plan'),
        ),
        'version 4 had no such setting',
      );
      await open('generic_upgraded').migrate();
      for (const schema of ['generic_fresh', 'generic_upgraded']) {
        const functions = await settingsOf(schema);
        assert.ok(functions.length >= 10, `${schema}: the backend's functions`);
        for (const f of functions) assert.ok(f.config.includes('plan_cache_mode=force_generic_plan'), f.name);
      }
    });

    it('adopts the version an earlier release kept in its migrations table', async () => {
      await open('legacy_migrations').migrate();
      await admin.query('DROP TABLE legacy_migrations.stratus_schema');
      await admin.query('CREATE TABLE legacy_migrations.migrations (version int PRIMARY KEY)');
      await admin.query('INSERT INTO legacy_migrations.migrations VALUES ($1)', [LATEST]);
      // Running the migrations again would fail on the existing tables.
      const reopened = open('legacy_migrations');
      await reopened.putQueue('still-there', settings);
      const { rows } = await admin.query('SELECT component, version FROM legacy_migrations.stratus_schema');
      assert.deepEqual(rows, [{ component: 'messaging', version: LATEST }]);
      assert.deepEqual(await reopened.listQueues(), ['still-there']);
    });

    it("finds the version it migrates from whatever pg's process-wide type parsers are", async () => {
      const first = 'CREATE TABLE hostile_migrations.first (n int)';
      await migratePostgres(admin, 'hostile_migrations', 'test', [first]);
      await withHostilePgTypes(() =>
        migratePostgres(admin, 'hostile_migrations', 'test', [
          first,
          'CREATE TABLE hostile_migrations.second (n int)',
        ]),
      );
      const { rows } = await admin.query(
        "SELECT to_regclass('hostile_migrations.second') IS NOT NULL AS created, version " +
          "FROM hostile_migrations.stratus_schema WHERE component = 'test'",
      );
      assert.deepEqual(rows, [{ created: true, version: 2 }]);
    });

    it("reads the same values whatever pg's process-wide type parsers are", async () => {
      // A schema a run, so both runs number their messages alike; lock tokens then differ only by their uuid.
      const run = async (schema: string) => {
        const backend = open(schema);
        const withoutUuids = ({ messages, nextDueAt }: ReceiveResult) => ({
          messages: messages.map((m) => ({ ...m, lockToken: m.lockToken.replace(/:.*/, '') })),
          nextDueAt,
        });
        await backend.putQueue('work', { ...settings, priority: { policy: 'weighted', agingMs: 1000 } });
        await backend.putQueue('carts', { ...settings, sessions: true });
        const queue = await backend.getQueue('work');
        const queues = await backend.listQueues();
        const sent = await backend.send(
          'work',
          [
            msg('a', {
              contentType: 'text/plain',
              correlationId: 'c-1',
              headers: { tenant: 't1' },
              priority: 2,
            }),
            msg('b', { subject: 'second', expiresAt: T0 + 600_000 }),
            msg('c'),
            msg('later', { availableAt: T0 + 60_000 }),
            msg('a'),
          ],
          T0,
        );
        const received = await backend.receive('work', { max: 3, lockMs: 30_000, now: T0 + 1 });
        const token = (id: string) => received.messages.find((m) => m.id === id)?.lockToken ?? '';
        const renewed = await backend.renewLocks('work', [token('a'), 'not-a-token'], 45_000, T0 + 2);
        const abandoned = await backend.abandon('work', token('b'), 0, T0 + 3);
        const deadLettered = await backend.deadLetter('work', token('c'), 'poison', 'cannot parse', T0 + 4);
        const next = await backend.completeAndReceive('work', token('a'), {
          max: 1,
          lockMs: 30_000,
          now: T0 + 5,
        });
        const completed = await backend.complete(
          'work',
          next.received.messages.map((m) => m.lockToken),
          T0 + 6,
        );
        const nothingDue = await backend.receive('work', { max: 1, lockMs: 30_000, now: T0 + 7 });
        const peeked = await backend.peek('work', { limit: 10 });
        const stats = await backend.stats('work', T0 + 8);
        const deadLetters = await backend.listDeadLetters('work', { limit: 10 });
        const resent = await backend.resendDeadLetters('work', [deadLetters[0]?.sequence ?? 0], T0 + 9);
        const purged = await backend.purgeDeadLetters('work', undefined, T0 + 9);
        await backend.send('carts', [msg('s', { sessionId: 'cart-1' })], T0);
        await backend.setSessionState('carts', 'cart-1', text('two items'));
        const sessionState = await backend.getSessionState('carts', 'cart-1');
        await backend.putTopic('orders.created', { retentionMs: 60_000 });
        const topic = await backend.getTopic('orders.created');
        const topics = await backend.listTopics();
        await backend.subscribe(
          { queue: 'work', topics: ['orders.*'], filter: { headers: { tenant: ['t1', 't2'] } } },
          'none',
          T0,
        );
        const subscriptions = await backend.listSubscriptions();
        const published = await backend.publish(
          'orders.created',
          [msg('p', { headers: { tenant: 't2' } }), msg('q', { headers: { tenant: 't3' } })],
          T0 + 10,
        );
        return {
          queue,
          queues,
          sent,
          received: withoutUuids(received),
          renewed,
          abandoned,
          deadLettered,
          next: { outcome: next.outcome, received: withoutUuids(next.received) },
          completed,
          nothingDue,
          peeked,
          stats,
          deadLetters,
          resent,
          purged,
          sessionState,
          topic,
          topics,
          subscriptions,
          published,
          unsubscribed: await backend.unsubscribe('work'),
          topicDeleted: await backend.deleteTopic('orders.created'),
          queueDeleted: await backend.deleteQueue('carts'),
        };
      };
      const expected = await run('types_default');
      assert.deepEqual(expected.received.messages[0]?.body, Buffer.from(text('a')));
      assert.deepEqual(expected.received.messages[0]?.headers, { tenant: 't1' });
      assert.deepEqual(expected.sessionState, Buffer.from(text('two items')));
      assert.deepEqual(expected.subscriptions[0]?.topics, ['orders.*']);
      assert.equal(expected.nothingDue.nextDueAt, T0 + 60_000);
      assert.deepEqual(await withHostilePgTypes(() => run('types_hostile')), expected);
    });

    it('never gives one message to two instances competing on separate pools', async () => {
      const [a, b] = [open(), open()] as const;
      const queue = `compete-${Date.now()}`;
      await a.putQueue(queue, settings);
      const total = 600;
      for (let i = 0; i < total; i += 200) {
        await a.send(
          queue,
          Array.from({ length: 200 }, (_, j) => msg(`m${i + j}`)),
          T0,
        );
      }
      const seen: string[] = [];
      const worker = async (backend: PostgresMessageBackend, max: number) => {
        for (let round = 0; round < 1000; round++) {
          const { messages } = await backend.receive(queue, { max, lockMs: 60_000, now: T0 });
          if (messages.length === 0) return;
          seen.push(...messages.map((m) => m.id));
          const outcomes = await backend.complete(
            queue,
            messages.map((m) => m.lockToken),
            T0,
          );
          assert.ok(outcomes.every((outcome) => outcome === 'ok'));
        }
      };
      await Promise.all([1, 3, 1, 5, 2, 1].flatMap((max) => [worker(a, max), worker(b, max)]));
      assert.equal(seen.length, total);
      assert.equal(new Set(seen).size, total);
    });

    it('keeps sessions in order across instances', async () => {
      const [a, b] = [open(), open()] as const;
      const queue = `sessions-${Date.now()}`;
      await a.putQueue(queue, { ...settings, sessions: true });
      const sessions = ['A', 'B', 'C'];
      // Sent concurrently from both instances, one message per call, so gating races with completions.
      const sending = Promise.all(
        sessions.map(async (session) => {
          for (let i = 0; i < 30; i++) {
            await (i % 2 === 0 ? a : b).send(queue, [msg(`${session}-${i}`, { sessionId: session })], T0);
          }
        }),
      );
      const order = new Map<string, number[]>();
      const holding = new Set<string>();
      let done = false;
      const worker = async (backend: PostgresMessageBackend) => {
        for (let round = 0; round < 2000 && !done; round++) {
          const { messages } = await backend.receive(queue, { max: 2, lockMs: 60_000, now: T0 });
          if (messages.length === 0) {
            await new Promise((resolve) => setTimeout(resolve, 2));
            continue;
          }
          for (const m of messages) {
            const session = m.sessionId as string;
            assert.ok(!holding.has(session), `session ${session} delivered twice at once`);
            holding.add(session);
            order.set(session, [...(order.get(session) ?? []), Number(m.id.split('-')[1])]);
          }
          for (const m of messages) holding.delete(m.sessionId as string);
          await backend.complete(
            queue,
            messages.map((m) => m.lockToken),
            T0,
          );
        }
      };
      const workers = Promise.all([a, b, a, b].map(worker));
      await sending;
      await waitUntil(async () => (await a.stats(queue, T0)).length === 0, 'the queue to drain', 20_000);
      done = true;
      await workers;
      for (const session of sessions) {
        assert.deepEqual(
          order.get(session),
          Array.from({ length: 30 }, (_, i) => i),
        );
      }
    });

    it('wakes a watcher in another instance through NOTIFY', async () => {
      const [watching, sending] = [open(), open()] as const;
      const queue = `notify-${Date.now()}`;
      await sending.putQueue(queue, settings);
      await watching.migrate();
      let wakes = 0;
      const stop = watching.watch(queue, () => wakes++);
      try {
        // The first LISTEN wakes once (nothing sent before it could be heard); then only sends do.
        await waitUntil(() => wakes > 0, 'LISTEN to take effect', 5000);
        const before = wakes;
        await sending.send(queue, [msg('ping')], T0);
        await waitUntil(() => wakes > before, 'the notification', 5000);
      } finally {
        stop();
      }
    });

    it('listens again after its connection is terminated', async () => {
      // A schema of its own, so that its channel has no other listener.
      const [watching, sending] = [open('relisten'), open('relisten')] as const;
      const queue = `relisten-${Date.now()}`;
      await sending.putQueue(queue, settings);
      let wakes = 0;
      const stop = watching.watch(queue, () => wakes++);
      try {
        await waitUntil(() => wakes > 0, 'LISTEN to take effect', 5000);
        const listenerPid = async () => {
          const { rows } = await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN "stratus_relisten"'`,
          );
          return rows.map((row) => row.pid);
        };
        const [pid] = await listenerPid();
        assert.ok(pid !== undefined);
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        const woken = wakes;
        // Re-LISTEN wakes every watcher once, since notifications may have been missed meanwhile.
        await waitUntil(() => wakes > woken, 'LISTEN again', 10_000);
        assert.ok(!(await listenerPid()).includes(pid));
        const before = wakes;
        await sending.send(queue, [msg('after-reconnect')], T0);
        await waitUntil(() => wakes > before, 'the notification after reconnecting', 5000);
      } finally {
        stop();
      }
    });

    it('works again after its connections are killed', async () => {
      const backend = open();
      const queue = `killed-${Date.now()}`;
      await backend.putQueue(queue, settings);
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      );
      // The pool notices dead idle connections on use; an operation may fail with the pg error, then it works.
      let sent = false;
      for (let attempt = 0; attempt < 5 && !sent; attempt++) {
        sent = await backend.send(queue, [msg('survivor')], T0).then(
          () => true,
          () => false,
        );
      }
      assert.ok(sent);
      assert.equal((await backend.stats(queue, T0)).available, 1);
    });

    it('group-commits concurrent single sends, each caller getting its own outcome', async () => {
      const backend = open();
      const queue = `group-${Date.now()}`;
      await backend.putQueue(queue, settings);
      const ids = Array.from({ length: 200 }, (_, i) => `g${i % 150}`);
      const outcomes = await Promise.all(ids.map((id, i) => backend.send(queue, [msg(id)], T0 + i)));
      assert.equal(outcomes.filter(([o]) => o?.accepted).length, 150);
      const accepted = outcomes.flat().filter((o) => o.accepted);
      assert.equal(new Set(accepted.map((o) => o.sequence)).size, 150);
      const peeked = await backend.peek(queue, { limit: 500 });
      assert.equal(peeked.length, 150);
      // Each message keeps its own caller's time.
      assert.ok(peeked.every((m) => m.enqueuedAt === T0 + Number(m.id.slice(1))));
    });

    it('group-commits concurrent receives, each caller locking with its own now and lock duration', async () => {
      const backend = open();
      const queue = `group-receive-${Date.now()}`;
      await backend.putQueue(queue, settings);
      await backend.send(
        queue,
        Array.from({ length: 10 }, (_, i) => msg(`m${i}`)),
        T0,
      );
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          backend.receive(queue, { max: 1, lockMs: 1000 * (i + 1), now: T0 + i }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.messages.map((m) => [m.id, m.lockedUntil])),
        Array.from({ length: 10 }, (_, i) => [[`m${i}`, T0 + i + 1000 * (i + 1)]]),
      );
      const settled = await Promise.all(
        results.map((r) => backend.complete(queue, [r.messages[0]?.lockToken as string], T0 + 20)),
      );
      assert.deepEqual(settled.flat(), Array(10).fill('ok'));
    });

    it('commits a receive on its own without waiting for the disk, and a completion that receives durably', async () => {
      const backend = open();
      const queue = `async-receive-${Date.now()}`;
      await backend.putQueue(queue, settings);
      await backend.send(queue, [msg('a'), msg('b')], T0);
      const client = await admin.connect();
      // Test servers run with durability off: this session asks for durable commits, as production would.
      await client.query('SET synchronous_commit = on');
      /** synchronous_commit as the transaction that ran `sql` would commit with. */
      const commitMode = async (sql: string, values: unknown[]) => {
        await client.query('BEGIN');
        try {
          const { rows } = await client.query(sql, values);
          const [{ synchronous_commit }] = (await client.query('SHOW synchronous_commit')).rows;
          return { rows, mode: synchronous_commit as string };
        } finally {
          await client.query('COMMIT');
        }
      };
      try {
        const received = await commitMode(
          'SELECT id, sequence, lock_token FROM stratus.receive_async_commit($1, $2, $3, $4, $5)',
          [queue, [1], [60_000], [T0], [1]],
        );
        assert.equal(received.mode, 'off');
        assert.deepEqual(
          received.rows.map((row) => row.id),
          ['a'],
        );
        const [head] = received.rows;
        const continued = await commitMode(
          'SELECT id FROM stratus.complete_and_receive($1, $2, $3, 1, 60000, $4, 1)',
          [queue, head.sequence, head.lock_token, T0 + 1],
        );
        assert.equal(continued.mode, 'on');
        assert.deepEqual(
          continued.rows.map((row) => row.id),
          ['b'],
        );
        assert.equal((await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit, 'on');
      } finally {
        await client.query('RESET synchronous_commit');
        client.release();
      }
    });

    it('judges expiry by each grouped caller’s own now and serves a caller again when its share expired', async () => {
      const backend = open();
      const queue = `group-expiry-${Date.now()}`;
      await backend.putQueue(queue, settings);
      await backend.send(queue, [msg('short', { expiresAt: T0 + 5 }), msg('long')], T0);
      const [late, early] = await Promise.all([
        backend.receive(queue, { max: 1, lockMs: 1000, now: T0 + 10 }),
        backend.receive(queue, { max: 1, lockMs: 1000, now: T0 + 1 }),
      ]);
      assert.deepEqual(
        late.messages.map((m) => m.id),
        ['long'],
      );
      assert.deepEqual(early.messages, []);
      assert.equal(early.nextDueAt, T0 + 1010);
      const [dead] = await backend.listDeadLetters(queue, { limit: 1 });
      assert.equal(dead?.id, 'short');
    });

    it('fails only the caller whose message PostgreSQL refuses', async () => {
      const backend = open();
      const queue = `refused-${Date.now()}`;
      await backend.putQueue(queue, settings);
      const results = await Promise.allSettled([
        backend.send(queue, [msg('fine-1')], T0),
        backend.send(queue, [msg('fine-2')], T0),
        backend.send(queue, [msg('nul\u0000id')], T0),
        backend.send(queue, [msg('fine-3')], T0),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.equal((await backend.stats(queue, T0)).available, 3);
    });

    it('matches topic patterns in SQL exactly as topicMatches does', async () => {
      const patterns = [
        'a.b',
        'a.*',
        'a.#',
        '#',
        '*',
        '#.b',
        'a.#.b',
        '*.*',
        'a.*.#',
        'x+y.(z)',
        'a.b.#.#',
        '',
      ];
      const topics = ['a', 'a.b', 'a.b.c', 'a.x.b', 'b', 'x+y.(z)', 'a..b', '', 'a.b.b'];
      const pairs = patterns.flatMap((pattern) => topics.map((topic) => ({ pattern, topic })));
      const { rows } = await admin.query<{ matches: boolean[] }>(
        `SELECT array_agg(('.' || t) ~ r ORDER BY i) AS matches FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS x(t, r, i)`,
        [pairs.map((p) => p.topic), pairs.map((p) => topicPatternRegex(p.pattern))],
      );
      assert.deepEqual(
        rows[0]?.matches,
        pairs.map((p) => topicMatches(p.pattern, p.topic)),
      );
    });
  });
});
