import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { postgresForSuite, waitUntil, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import type { EventToStore, RecordedEvent } from '../backend.js';
import { EventStore } from '../event-store.js';
import { eventStoreBackendContract } from '../event-store-backend.contract.js';
import { subscriptionContract } from '../subscription.contract.js';
import { PostgresEventStoreBackend } from './postgres-event-store.js';

const suite = await postgresForSuite('eventsourcing-postgres');
const T0 = 1_750_000_000_000;
let schemas = 0;
let ids = 0;
const event = (type: string, data: unknown): EventToStore => ({
  id: `g-${++ids}`,
  type,
  data: JSON.stringify(data),
  metadata: '{}',
  schemaVersion: 1,
});

/** One event appended to `stream` through es_append itself, in whatever transaction `client` has open. */
async function appendDirectly(
  client: pg.PoolClient,
  schema: string,
  stream: string,
  id = stream,
): Promise<void> {
  const request = {
    s: stream,
    c: stream.split('-')[0],
    m: 1,
    e: 0,
    i: [id],
    t: ['S'],
    d: [{}],
    x: [{}],
    v: [1],
  };
  await client.query(`SELECT * FROM "${schema}".es_append($1::jsonb, $2)`, [JSON.stringify([request]), T0]);
}

/** Counts the readAll queries `pool` sends from now on. */
function countReadAlls(pool: pg.Pool): { readonly reads: number } {
  const counted = { reads: 0 };
  const query = pool.query.bind(pool);
  pool.query = ((config: { name?: string }, ...rest: unknown[]) => {
    if (config?.name?.endsWith('_read_all')) counted.reads++;
    return (query as (...args: unknown[]) => unknown)(config, ...rest);
  }) as typeof pool.query;
  return counted;
}

describe('PostgresEventStoreBackend', { skip: suite.skip }, () => {
  const url = suite.url as string;
  const pools: pg.Pool[] = [];
  const stores: PostgresEventStoreBackend[] = [];
  after(async () => {
    for (const store of stores) await store.close();
    for (const pool of pools) await pool.end();
    await suite.release();
  });

  /** A store on a pool of its own (as another process would have), in `schema`. */
  function open(schema: string, poolSize = 4): { store: PostgresEventStoreBackend; pool: pg.Pool } {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    pool.on('error', () => {});
    pools.push(pool);
    const store = new PostgresEventStoreBackend({ pool, schema });
    stores.push(store);
    return { store, pool };
  }

  eventStoreBackendContract(
    'postgres',
    async () => new PostgresEventStoreBackend({ connectionString: url, schema: `es_contract_${++schemas}` }),
  );
  subscriptionContract(
    'postgres',
    async () => new PostgresEventStoreBackend({ connectionString: url, schema: `es_contract_${++schemas}` }),
  );

  it('validates its options', () => {
    assert.throws(() => new PostgresEventStoreBackend({}), /pool/);
    assert.throws(
      () => new PostgresEventStoreBackend({ connectionString: url, schema: 'Bad-Name' }),
      /schema/,
    );
    assert.throws(() => new PostgresEventStoreBackend({ connectionString: url, poolSize: 0 }), /poolSize/);
  });

  it('group-commits concurrent appends, each with its own outcome', async () => {
    const { store } = open(`es_group_${++schemas}`, 2);
    await store.append({ streamName: 'taken-1', expectedVersion: 'any', events: [event('A', 0)], now: T0 });
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 30 }, (_, i) =>
        store.append({
          streamName: `group-${i}`,
          expectedVersion: 'no-stream',
          events: [event('A', i)],
          now: T0,
        }),
      ),
      store.append({ streamName: 'taken-1', expectedVersion: 'no-stream', events: [event('B', 1)], now: T0 }),
    ]);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 30);
    assert.equal(outcomes[30]?.status, 'rejected');
    assert.equal(await store.streamVersion('taken-1'), 1);
    assert.equal((await store.listStreams({ category: 'group' })).length, 30);
  });

  it('recognises an append repeated while the first is still committing (ids are checked before the stream lock)', async () => {
    const schema = `es_id_race_${++schemas}`;
    const { store, pool } = open(schema);
    await store.append({ streamName: 'race-1', expectedVersion: 'any', events: [event('A', 1)], now: T0 });
    const first = await pool.connect();
    try {
      await first.query('BEGIN');
      await appendDirectly(first, schema, 'race-1', 'race-id');
      const again = store.append({
        streamName: 'race-1',
        expectedVersion: 'any',
        events: [{ id: 'race-id', type: 'S', data: '{}', metadata: '{}', schemaVersion: 1 }],
        now: T0,
      });
      // The repeat has checked the id (not committed yet) and now waits for the stream's row.
      await waitUntil(async () => {
        const { rows } = await pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
          [`%"${schema}".es_append%`],
        );
        return rows.length > 0;
      }, 'the repeated append waits for the stream lock');
      await first.query('COMMIT');
      const result = await again;
      assert.equal(result.written, false);
      assert.equal(result.nextExpectedVersion, 2);
      assert.equal(await store.streamVersion('race-1'), 2);
    } finally {
      first.release();
    }
  });

  it("reads the same values whatever pg's process-wide type parsers are (Emmett's dumbo and many apps change them)", async () => {
    const { store } = open(`es_types_${++schemas}`);
    await store.append({
      streamName: 'typed-1',
      expectedVersion: 'no-stream',
      events: [event('A', { n: 1, nested: { list: [1, 'two'] } }), event('B', { n: 2 })],
      now: T0 + 0.5,
    });
    await store.storeSnapshot({
      streamName: 'typed-1',
      version: 2,
      state: '{"n":3}',
      schemaVersion: 4,
      takenAt: T0,
    });
    await store.storeCheckpoint('typed', 2);
    const everything = async () => ({
      forwards: await store.readStream('typed-1'),
      backwards: await store.readStream('typed-1', { direction: 'backwards', maxCount: 1 }),
      all: await store.readAll({ after: 0 }),
      version: await store.streamVersion('typed-1'),
      head: await store.headPosition(),
      streams: await store.listStreams({ category: 'typed' }),
      snapshot: await store.loadSnapshot('typed-1'),
      checkpoint: await store.loadCheckpoint('typed'),
    });
    const expected = await everything();
    assert.deepEqual(expected.forwards[0]?.data, { n: 1, nested: { list: [1, 'two'] } });
    assert.equal(expected.forwards[0]?.recordedAt, T0 + 0.5);
    assert.deepEqual(await withHostilePgTypes(everything), expected);
  });

  it('shares one query among reads of all events asked with the same bounds before it went out', async () => {
    const { store, pool } = open(`es_shared_reads_${++schemas}`);
    await store.append({ streamName: 's-1', expectedVersion: 'any', events: [event('A', 1)], now: T0 });
    const counted = countReadAlls(pool);
    const [first, second, other] = await Promise.all([
      store.readAll({ after: 0 }),
      store.readAll({ after: 0 }),
      store.readAll({ after: 0, maxCount: 10 }),
    ]);
    assert.equal(counted.reads, 2, 'the first two shared a query; other bounds have their own');
    assert.deepEqual(
      [first, second, other].map((events) => events.map((e) => e.type)),
      [['A'], ['A'], ['A']],
    );
    assert.notEqual(first, second, 'each caller has its own array');
    // A read asked after the shared one went out is a query of its own, and sees what was appended meanwhile.
    await store.readAll({ after: 0 });
    await store.append({ streamName: 's-1', expectedVersion: 'any', events: [event('B', 2)], now: T0 });
    assert.deepEqual(
      (await store.readAll({ after: 0 })).map((e) => e.type),
      ['A', 'B'],
    );
    assert.equal(counted.reads, 4);
  });

  it('answers a following read with what a read from the same position already on its way finds, if anything', async () => {
    const { store, pool } = open(`es_following_${++schemas}`);
    await store.append({
      streamName: 'f-1',
      expectedVersion: 'any',
      events: [event('A', 1), event('B', 2), event('C', 3)],
      now: T0,
    });
    const counted = countReadAlls(pool);
    const sentOne = () => new Promise((resolve) => setImmediate(resolve));
    const types = (events: readonly RecordedEvent[]) => events.map((e) => e.type);
    // Joined: one query, the follower's answer cut to its own maxCount.
    const plain = store.readAll({ after: 0 });
    await sentOne();
    const following = await store.readAll({ after: 0, maxCount: 2, following: true });
    assert.deepEqual(types(await plain), ['A', 'B', 'C']);
    assert.deepEqual(types(following), ['A', 'B']);
    assert.equal(counted.reads, 1);
    // Without `following`, or from another position, a read goes out on its own.
    const again = store.readAll({ after: 0 });
    await sentOne();
    await Promise.all([store.readAll({ after: 0 }), store.readAll({ after: 1, following: true }), again]);
    assert.equal(counted.reads, 4);
    // A read on its way that finds nothing does not answer a follower: it reads on its own (nothing is appended
    // meanwhile, so both find nothing; an append racing the first read could land before it).
    const head = await store.headPosition();
    const empty = store.readAll({ after: head });
    await sentOne();
    const follower = store.readAll({ after: head, following: true });
    assert.deepEqual(await empty, []);
    assert.deepEqual(await follower, []);
    assert.equal(counted.reads, 6, 'the follower read on its own');
    await store.append({ streamName: 'f-1', expectedVersion: 'any', events: [event('D', 4)], now: T0 });
    assert.deepEqual(types(await store.readAll({ after: head, following: true })), ['D']);
  });

  it('never lets a reader skip an event that commits after a later position was read', async (t) => {
    const schema = `es_gaps_${++schemas}`;
    const { store } = open(schema, 8);
    await store.migrate();
    // Slow appenders hold their transaction open after drawing positions, as an append inside a longer business
    // transaction does; fast ones commit meanwhile with higher positions.
    const slow = new pg.Pool({ connectionString: url, max: 4 });
    slow.on('error', () => {});
    pools.push(slow);
    /** Appends event `i` in a transaction of its own, held open (after `appended`) until `release` resolves. */
    const appendHeld = async (i: number, release: Promise<void>, appended = () => {}) => {
      const client = await slow.connect();
      try {
        await client.query('BEGIN');
        await appendDirectly(client, schema, `slow-${i}`);
        appended();
        await release;
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    };
    const appendSlowly = (i: number) => appendHeld(i, new Promise((resolve) => setTimeout(resolve, 20)));
    const naive = new pg.Pool({ connectionString: url, max: 1 });
    pools.push(naive);

    const TOTAL_FAST = 1500;
    const TOTAL_SLOW = 60;
    let writing = true;
    // A live catch-up subscription, woken by NOTIFY, follows the appends as they happen.
    const subscribed: number[] = [];
    const subscription = new EventStore({ backend: store }).subscribe({
      handler: (e) => void subscribed.push(e.globalPosition),
      batchSize: 100,
    });
    const seen: number[] = [];
    const naiveSeen: number[] = [];
    const reader = (async () => {
      let after = 0;
      let naiveAfter = 0;
      while (writing || after < (await store.headPosition())) {
        for (const e of await store.readAll({ after, maxCount: 500 })) {
          seen.push(e.globalPosition);
          after = e.globalPosition;
        }
        // The control: a plain read by position, which is what skips events.
        const { rows } = await naive.query<{ position: string }>(
          `SELECT position FROM "${schema}".es_events WHERE position > $1 ORDER BY position LIMIT 500`,
          [naiveAfter],
        );
        for (const row of rows) {
          naiveSeen.push(Number(row.position));
          naiveAfter = Number(row.position);
        }
      }
    })();
    const fast = (async () => {
      const writers = Array.from({ length: 6 }, async (_, w) => {
        for (let i = w; i < TOTAL_FAST; i += 6) {
          await store.append({
            streamName: `fast-${i % 50}`,
            expectedVersion: 'any',
            events: [event('F', i)],
            now: T0,
          });
        }
      });
      await Promise.all(writers);
    })();
    const slowOnes = (async () => {
      for (let i = 0; i < TOTAL_SLOW; i += 4) await Promise.all([0, 1, 2, 3].map((k) => appendSlowly(i + k)));
    })();
    await Promise.all([fast, slowOnes]);
    writing = false;
    await reader;

    const { rows } = await naive.query<{ position: string }>(
      `SELECT position FROM "${schema}".es_events ORDER BY position`,
    );
    const stored = rows.map((row) => Number(row.position));
    assert.equal(stored.length, TOTAL_FAST + TOTAL_SLOW);
    assert.deepEqual(seen, stored, 'the reader saw every stored position, once, in order');
    await waitUntil(() => subscribed.length >= stored.length, 'the subscription reaches the head');
    await subscription.stop();
    assert.deepEqual(subscribed, stored, 'the subscription saw every stored position, once, in order');
    // Under load the plain read skips some of these; whether it does in one run depends on timing.
    const skipped = stored.filter((position) => !naiveSeen.includes(position)).length;
    t.diagnostic(`the plain read by position skipped ${skipped} of ${stored.length} events`);

    // The hazard, step by step: an append holds its transaction open after drawing a position, a later position
    // commits, and a plain read by position passes over the first for good; the store's read does not.
    const head = await store.headPosition();
    let release!: () => void;
    let drawn!: () => void;
    const positionDrawn = new Promise<void>((resolve) => (drawn = resolve));
    const held = appendHeld(TOTAL_SLOW, new Promise<void>((resolve) => (release = resolve)), drawn);
    await positionDrawn;
    const later = await store.append({
      streamName: 'fast-after',
      expectedVersion: 'any',
      events: [event('F', TOTAL_FAST)],
      now: T0,
    });
    const plainBefore = await naive.query<{ position: string }>(
      `SELECT position FROM "${schema}".es_events WHERE position > $1 ORDER BY position`,
      [head],
    );
    // The store's read waits for the open append instead of reading past it.
    let storeAnswered = false;
    const storeRead = store.readAll({ after: head }).finally(() => {
      storeAnswered = true;
    });
    await naive.query('SELECT 1');
    assert.equal(storeAnswered, false, 'the store read waits while an earlier position may still commit');
    release();
    await held;
    const plainAfter = await naive.query<{ position: string }>(
      `SELECT position FROM "${schema}".es_events WHERE position > $1 ORDER BY position`,
      [later.lastPosition],
    );
    assert.deepEqual(
      plainBefore.rows.map((row) => Number(row.position)),
      [later.lastPosition],
      'the plain read saw the later position first',
    );
    assert.deepEqual(plainAfter.rows, [], 'and never sees the earlier one after it');
    const both = await naive.query<{ position: string }>(
      `SELECT position FROM "${schema}".es_events WHERE position > $1 ORDER BY position`,
      [head],
    );
    assert.equal(both.rows.length, 2);
    assert.deepEqual(
      (await storeRead).map((e) => e.globalPosition),
      both.rows.map((row) => Number(row.position)),
      'the store hands out both, in order, once the first committed',
    );
  });
  it('answers a read without waiting when no append can still commit among its positions', {
    timeout: 20_000,
  }, async () => {
    const schema = `es_open_${++schemas}`;
    const { store, pool } = open(schema);
    await store.migrate();
    await store.append({ streamName: 'done-1', expectedVersion: 'any', events: [event('D', 1)], now: T0 });
    const head = await store.headPosition();
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await appendDirectly(client, schema, 'open-1');
      // Nothing after the head is visible: the read returns at once instead of waiting for the open append (a
      // reader that waited here would hold this test until its timeout).
      assert.deepEqual(await store.readAll({ after: head }), []);
      // The append's horizon lock, as every append takes it before drawing positions.
      const { rows } = await client.query<{ classid: number }>(
        "SELECT classid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND pid = pg_backend_pid()",
      );
      // classid is an oid (unsigned); the lock functions take the int4 the key was (negative for half the schemas).
      const horizonKey = (rows[0] as { classid: number }).classid | 0;
      await client.query('COMMIT');
      assert.deepEqual(
        (await store.readAll({ after: head })).map((e) => e.streamName),
        ['open-1'],
      );
      // An append that holds its horizon lock and has drawn no position yet: every position drawn so far is
      // visible, so a read returns them without waiting for it (a read at the horizon would wait here).
      const before = await store.headPosition();
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::int, pg_backend_pid())', [horizonKey]);
      await store.append({ streamName: 'done-2', expectedVersion: 'any', events: [event('D', 2)], now: T0 });
      assert.deepEqual(
        (await store.readAll({ after: before })).map((e) => e.streamName),
        ['done-2'],
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  });
});
