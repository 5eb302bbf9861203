import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/sql';
import { postgresForSuite, waitUntil, withHostilePgTypes } from '@stratus/testkit';
import pg from 'pg';
import type { RecordedEvent } from '../backend.js';
import { EventStore } from '../event-store.js';
import { PostgresEventStoreBackend } from '../postgres/postgres-event-store.js';
import { SqliteEventStoreBackend } from '../sqlite/sqlite-event-store.js';
import {
  type AnnouncedChange,
  type DocumentKey,
  type DocumentProjectionDefinition,
  type DocumentReader,
  type DocumentSlice,
  documentTable,
  postgresDocumentProjection,
  postgresDocumentReader,
  sqliteDocumentProjection,
  sqliteDocumentReader,
} from './document-projection.js';
import { PostgresProjectionTarget } from './postgres-projection-target.js';
import type { Projection } from './projection.js';
import { ProjectionRunner } from './projection-runner.js';
import { SqliteProjectionTarget } from './sqlite-projection-target.js';

interface Cart {
  id: string;
  owner: string;
  items: number;
}

/** Carts by owner; a checkout deletes the cart and counts it on the owner's document. */
const carts: DocumentProjectionDefinition = {
  name: 'carts',
  version: 1,
  eventTypes: ['CartOpened', 'ItemAdded', 'CheckedOut'],
  documentsOf(event: RecordedEvent) {
    const data = event.data as { cart: string; owner: string };
    return [
      { collection: 'cart', id: data.cart },
      { collection: 'owner', id: data.owner },
    ];
  },
  apply(event, session) {
    const { cart, owner } = event.data as { cart: string; owner: string };
    if (event.type === 'CartOpened') {
      session.put('cart', cart, { id: cart, owner, items: 0 } satisfies Cart, owner);
    } else if (event.type === 'ItemAdded') {
      const current = session.get<Cart>('cart', cart);
      if (current !== undefined) session.put('cart', cart, { ...current, items: current.items + 1 }, owner);
    } else {
      session.delete('cart', cart);
      const done = session.get<{ checkouts: number }>('owner', owner)?.checkouts ?? 0;
      session.put('owner', owner, { checkouts: done + 1 });
    }
  },
};

const sneaky: DocumentProjectionDefinition = {
  ...carts,
  name: 'sneaky',
  apply(_event, session) {
    session.put('cart', 'not-declared', {});
  },
};

async function exercise<Tx>(
  store: EventStore,
  runner: (
    projection: DocumentProjectionDefinition,
    onChange: (keys: readonly DocumentKey[]) => void,
  ) => ProjectionRunner<Tx>,
  reader: DocumentReader,
) {
  const changed = new Set<string>();
  const onChange = (keys: readonly DocumentKey[]) => {
    for (const key of keys) changed.add(`${key.collection}/${key.id}`);
  };
  const add = (cart: string, owner: string, type: string) =>
    store.appendToStream(`cart-${cart}`, [{ type, data: { cart, owner } }]);
  await add('c1', 'ann', 'CartOpened');
  await add('c1', 'ann', 'ItemAdded');
  await add('c2', 'ann', 'CartOpened');
  await add('c3', 'bob', 'CartOpened');
  await add('c1', 'ann', 'ItemAdded');
  await add('c2', 'ann', 'CheckedOut');

  const running = runner(carts, onChange);
  void running.start();
  await running.caughtUp;
  await waitUntil(async () => (await reader.get('cart', 'c1')) !== undefined, 'the view is active');
  assert.deepEqual(await reader.get('cart', 'c1'), { id: 'c1', owner: 'ann', items: 2 });
  assert.equal(await reader.get('cart', 'c2'), undefined, 'deleted in the same batch it was created');
  assert.deepEqual(await reader.find('cart', 'ann'), [{ id: 'c1', owner: 'ann', items: 2 }]);
  assert.deepEqual(
    (await reader.find<Cart>('cart')).map((cart) => cart.id),
    ['c1', 'c3'],
  );
  const slice = async (slice: DocumentSlice, lookup?: string) =>
    (await reader.find<Cart>('cart', lookup, slice)).map((cart) => cart.id);
  assert.deepEqual(await slice({ limit: 1 }), ['c1']);
  assert.deepEqual(await slice({ limit: 5, after: 'c1' }), ['c3']);
  assert.deepEqual(await slice({ limit: 5, after: 'c3' }), []);
  assert.deepEqual(await slice({ limit: 5, before: 'c3' }), ['c1']);
  assert.deepEqual(await slice({ limit: 1, before: 'c9' }), ['c3'], 'the nearest before the cursor');
  assert.deepEqual(await slice({ limit: 2, before: 'c9' }), ['c1', 'c3'], 'in id order');
  assert.deepEqual(await slice({ limit: 5, after: 'c0' }, 'bob'), ['c3']);
  await assert.rejects(reader.find('cart', undefined, { limit: 0 }), /slice\.limit/);
  assert.deepEqual(await reader.get('owner', 'ann'), { checkouts: 1 });
  assert.deepEqual([...changed].sort(), ['cart/c1', 'cart/c2', 'cart/c3', 'owner/ann']);

  await add('c1', 'ann', 'CheckedOut');
  await waitUntil(async () => (await reader.get('owner', 'ann')) !== undefined, 'live');
  await waitUntil(
    async () => (await reader.get<{ checkouts: number }>('owner', 'ann'))?.checkouts === 2,
    'a live event lands',
  );
  assert.deepEqual(await reader.find('cart', 'ann'), []);
  await running.stop();

  await assert.rejects(
    runner(sneaky, onChange).start(),
    /sneaky touched cart\/not-declared .* without declaring it/,
  );
}

describe('document projections on SQLite', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stratus-documents-'));
  after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

  it('load, apply in memory and write back per batch; find by lookup; refuse undeclared documents', async () => {
    const database = openSqlite(join(directory, 'docs.db'));
    const store = new EventStore({ backend: new SqliteEventStoreBackend({ database, watchIntervalMs: 5 }) });
    const target = new SqliteProjectionTarget({ database });
    await exercise(
      store,
      (definition, onChange) =>
        new ProjectionRunner(store, target, sqliteDocumentProjection(definition, { onChange }), {
          batchSize: 4,
          pollIntervalMs: 20,
        }),
      sqliteDocumentReader(database, target, 'carts'),
    );
    await store.close();
    database.close();
  });

  it('tells which documents changed once the batch committed', async () => {
    const path = join(directory, 'told.db');
    const database = openSqlite(path);
    const store = new EventStore({ backend: new SqliteEventStoreBackend({ database, watchIntervalMs: 5 }) });
    const target = new SqliteProjectionTarget({ database });
    // Another connection sees only what was committed.
    const other = openSqlite(path);
    const seen: (string | undefined)[] = [];
    const runner = new ProjectionRunner(
      store,
      target,
      sqliteDocumentProjection(carts, {
        onChange(keys) {
          const table = documentTable(carts.name, carts.version);
          for (const { id } of keys) {
            const select = other.prepare(`SELECT doc FROM ${table} WHERE collection = 'cart' AND id = ?`);
            seen.push(select.get<{ doc: string }>(id)?.doc);
          }
        },
      }),
      { pollIntervalMs: 20 },
    );
    const running = runner.start();
    await store.appendToStream('cart-c9', [{ type: 'CartOpened', data: { cart: 'c9', owner: 'eve' } }]);
    await waitUntil(() => seen.length > 0, 'told');
    assert.deepEqual(
      seen.map((doc) => doc && JSON.parse(doc)),
      [{ id: 'c9', owner: 'eve', items: 0 }],
    );
    await runner.stop();
    await running;
    other.close();
    await store.close();
    database.close();
  });

  it('refuses a bad definition', () => {
    assert.throws(() => sqliteDocumentProjection({ ...carts, name: 'Bad Name' }), /definition\.name/);
    assert.throws(() => sqliteDocumentProjection({ ...carts, apply: 1 as never }), /definition\.apply/);
  });
});

const suite = await postgresForSuite('eventsourcing-document-projection');
describe('document projections on PostgreSQL', { skip: suite.skip }, () => {
  after(() => suite.release());

  /** The exercise on a store, target and reader of their own in `schema`. */
  async function exerciseOnPostgres(schema: string): Promise<void> {
    const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
    const store = new EventStore({ backend: new PostgresEventStoreBackend({ pool, schema }) });
    const target = new PostgresProjectionTarget({ pool, schema });
    const projection = (
      definition: DocumentProjectionDefinition,
      onChange: (keys: readonly DocumentKey[]) => void,
    ): Projection<pg.PoolClient> => postgresDocumentProjection(definition, { schema, onChange });
    try {
      await exercise(
        store,
        (definition, onChange) =>
          new ProjectionRunner(store, target, projection(definition, onChange), {
            batchSize: 4,
            pollIntervalMs: 20,
          }),
        postgresDocumentReader(pool, target, 'carts', { schema }),
      );
    } finally {
      await store.close();
      await pool.end();
    }
  }

  it('load, apply in memory and write back per batch; find by lookup; refuse undeclared documents', () =>
    exerciseOnPostgres('docs'));

  // Through pg's parsers the view's status (text) never reads as active, and the wait for it would not end.
  it(
    "does the same whatever pg's process-wide type parsers are (documents, view versions, activation)",
    {
      timeout: 20_000,
    },
    () => withHostilePgTypes(() => exerciseOnPostgres('docs_hostile_types')),
  );

  it("with notifyChannel, announces a batch's documents when it commits (with their content once its version serves), never a rolled-back one", async () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
    const schema = 'docs_notify';
    const target = new PostgresProjectionTarget({ pool, schema });
    const projection = postgresDocumentProjection(carts, { schema, notifyChannel: 'carts_changed' });
    const listener = await pool.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query('LISTEN carts_changed');
    const event = (type: string, position: number): RecordedEvent => ({
      id: `e-${position}`,
      type,
      data: { cart: 'c-1', owner: 'ann' },
      metadata: {},
      schemaVersion: 1,
      streamName: 'cart-c-1',
      streamVersion: position,
      globalPosition: position,
      recordedAt: 0,
    });
    const batch = async (events: RecordedEvent[], outcome: 'COMMIT' | 'ROLLBACK') => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await projection.applyBatch?.(client, events, 1);
        assert.deepEqual(heard, [], 'nothing heard before the end of the transaction');
        await client.query(outcome);
      } finally {
        client.release();
      }
    };
    // Notifications arrive in commit order: a rolled-back one would come before the marker.
    const heardUpToMarker = async () => {
      await pool.query(`SELECT pg_notify('carts_changed', 'marker')`);
      await waitUntil(() => heard.includes('marker'), 'the marker heard');
      return heard.splice(0).map((payload) => (payload === 'marker' ? payload : JSON.parse(payload)));
    };
    await target.prepare('carts', 1, (client) => projection.setup(client, 1));
    await batch([event('CartOpened', 1)], 'ROLLBACK');
    await batch([event('CartOpened', 1), event('ItemAdded', 2)], 'COMMIT');
    assert.deepEqual(
      await heardUpToMarker(),
      [[{ collection: 'cart', id: 'c-1' }], 'marker'],
      'a version still building announces keys only',
    );
    await target.activate('carts', 1);
    await batch([event('ItemAdded', 3)], 'COMMIT');
    assert.deepEqual(await heardUpToMarker(), [
      [{ collection: 'cart', id: 'c-1', doc: { id: 'c-1', owner: 'ann', items: 2 } }],
      'marker',
    ]);
    await batch([event('CheckedOut', 4)], 'COMMIT');
    assert.deepEqual(await heardUpToMarker(), [
      [
        { collection: 'cart', id: 'c-1', deleted: true },
        { collection: 'owner', id: 'ann', doc: { checkouts: 1 } },
      ],
      'marker',
    ]);
    assert.throws(() => postgresDocumentProjection(carts, { schema, notifyChannel: '' }), /notifyChannel/);
    assert.throws(() => postgresDocumentProjection(carts, { schema: 'Bad' }), /schema/);
    assert.throws(
      () => postgresDocumentProjection(carts, { schema, registrySchema: 'a-b' }),
      /registrySchema/,
    );
    listener.release();
    await pool.end();
  });

  it('announces a batch too big for one notification in several, the content of each document that fits', async () => {
    const pool = new pg.Pool({ connectionString: suite.url, max: 4 });
    const schema = 'docs_notify_big';
    const target = new PostgresProjectionTarget({ pool, schema });
    const notes: DocumentProjectionDefinition = {
      name: 'notes',
      version: 1,
      documentsOf: (event) => [{ collection: 'note', id: (event.data as { note: string }).note }],
      apply(event, session) {
        const { note, text } = event.data as { note: string; text: string };
        session.put('note', note, { text });
      },
    };
    const projection = postgresDocumentProjection(notes, { schema, notifyChannel: 'notes_changed' });
    await target.prepare('notes', 1, (client) => projection.setup(client, 1));
    await target.activate('notes', 1);
    const listener = await pool.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    await listener.query('LISTEN notes_changed');
    const written = (note: number, text: string): RecordedEvent => ({
      id: `n-${note}`,
      type: 'NoteWritten',
      data: { note: `n-${note}`, text },
      metadata: {},
      schemaVersion: 1,
      streamName: `note-n-${note}`,
      streamVersion: 1,
      globalPosition: note + 1,
      recordedAt: 0,
    });
    // 40 notes of about 300 bytes each, and one too big to announce.
    const events = [
      ...Array.from({ length: 40 }, (_, i) => written(i, 'x'.repeat(250))),
      written(40, 'y'.repeat(9000)),
    ];
    const client = await pool.connect();
    await client.query('BEGIN');
    await projection.applyBatch?.(client, events, 1);
    await client.query('COMMIT');
    client.release();
    await waitUntil(
      () => heard.flatMap((payload) => JSON.parse(payload)).length === 41,
      'every note announced',
    );
    assert.ok(heard.length > 1, `several notifications (${heard.length})`);
    for (const payload of heard) assert.ok(Buffer.byteLength(payload) < 8000);
    const announced = heard.flatMap((payload) => JSON.parse(payload) as AnnouncedChange[]);
    assert.deepEqual(
      announced.map((change) => change.id),
      Array.from({ length: 41 }, (_, i) => `n-${i}`),
    );
    assert.deepEqual(announced[0]?.doc, { text: 'x'.repeat(250) });
    assert.deepEqual(announced[40], { collection: 'note', id: 'n-40' }, 'too big: the key alone');
    listener.release();
    await pool.end();
  });
});
