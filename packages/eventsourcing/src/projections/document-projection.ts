import { createHash } from 'node:crypto';
import { assertFunction, InvalidOptionsError } from '@stratus/core';
import { assertSchemaName, postgresTypes, type SqliteDatabase } from '@stratus/sql';
import type { Pool, PoolClient } from 'pg';
import type { RecordedEvent } from '../backend.js';
import type { Projection } from './projection.js';
import { activeVersion, type ProjectionTarget } from './target.js';

/** A document of a view: JSON under (collection, id). */
export interface DocumentKey {
  readonly collection: string;
  readonly id: string;
}

/** What `apply` sees: the documents its event declared, as the batch left them so far, and writes to them. */
export interface DocumentSession {
  /** Only documents declared by `documentsOf` for this event can be read (they were loaded before the batch). */
  get<T>(collection: string, id: string): T | undefined;
  /** Stores `doc`; `lookup` is a secondary key that `find` selects on (e.g. an email, a parent id). */
  put(collection: string, id: string, doc: unknown, lookup?: string): void;
  delete(collection: string, id: string): void;
}

/**
 * A view kept as JSON documents, the same code on SQLite and PostgreSQL (as Marten's document projections): each
 * event names the documents it touches, a batch loads them all in one read, applies its events in memory and
 * writes the changed documents back in one statement per kind, in the commit's transaction.
 */
export interface DocumentProjectionDefinition {
  readonly name: string;
  readonly version: number;
  readonly eventTypes?: readonly string[];
  documentsOf(event: RecordedEvent): readonly DocumentKey[];
  apply(event: RecordedEvent, session: DocumentSession): void;
}

export interface DocumentProjectionOptions {
  /**
   * Told which documents a batch wrote: lets a process wake exactly the readers waiting for those documents instead
   * of all of them. SQLite tells once the batch committed (never for a rolled-back one), so a reader woken reads the
   * change and an in-process cache can trust it; PostgreSQL tells as the batch writes, before its commit.
   */
  readonly onChange?: (keys: readonly DocumentKey[]) => void;
}

interface Change {
  readonly key: DocumentKey;
  /** undefined: deleted. */
  readonly doc: unknown;
  readonly lookup: string | null;
}

const NAME = /^[a-z][a-z0-9_]{0,40}$/;
const keyOf = (collection: string, id: string) => `${collection}\u0000${id}`;

function checkDefinition(definition: DocumentProjectionDefinition): void {
  if (typeof definition !== 'object' || definition === null)
    throw new InvalidOptionsError('definition', 'expected an object');
  if (typeof definition.name !== 'string' || !NAME.test(definition.name)) {
    throw new InvalidOptionsError(
      'definition.name',
      'expected lower-case letters, digits and _ (a table name part)',
    );
  }
  assertFunction('definition.documentsOf', definition.documentsOf);
  assertFunction('definition.apply', definition.apply);
}

/** The table of one version of a view. */
export function documentTable(name: string, version: number): string {
  return `view_${name}_v${version}`;
}

/** Every document the batch's events declare, each once. */
function declaredKeys(
  definition: DocumentProjectionDefinition,
  events: readonly RecordedEvent[],
): DocumentKey[] {
  const keys = new Map<string, DocumentKey>();
  for (const event of events) {
    for (const key of definition.documentsOf(event)) keys.set(keyOf(key.collection, key.id), key);
  }
  return [...keys.values()];
}

/** Applies the events over the loaded documents; returns the final state of every document written. */
function applyInMemory(
  definition: DocumentProjectionDefinition,
  events: readonly RecordedEvent[],
  loaded: ReadonlyMap<string, unknown>,
): Change[] {
  const current = new Map(loaded);
  const changes = new Map<string, Change>();
  for (const event of events) {
    const declared = new Set(definition.documentsOf(event).map((key) => keyOf(key.collection, key.id)));
    const check = (collection: string, id: string) => {
      const key = keyOf(collection, id);
      if (!declared.has(key)) {
        throw new InvalidOptionsError(
          'documentsOf',
          `${definition.name} touched ${collection}/${id} for a ${event.type} event without declaring it`,
        );
      }
      return key;
    };
    definition.apply(event, {
      get: <T>(collection: string, id: string) => current.get(check(collection, id)) as T | undefined,
      put(collection, id, doc, lookup) {
        const key = check(collection, id);
        if (doc === undefined) throw new InvalidOptionsError('doc', 'expected a JSON value, got undefined');
        current.set(key, doc);
        changes.set(key, { key: { collection, id }, doc, lookup: lookup ?? null });
      },
      delete(collection, id) {
        const key = check(collection, id);
        current.delete(key);
        changes.set(key, { key: { collection, id }, doc: undefined, lookup: null });
      },
    });
  }
  return [...changes.values()];
}

function eventsOfInterest(definition: DocumentProjectionDefinition): Pick<Projection<unknown>, 'eventTypes'> {
  return definition.eventTypes === undefined ? {} : { eventTypes: definition.eventTypes };
}

function notify(options: DocumentProjectionOptions, changes: readonly Change[]): void {
  if (options.onChange !== undefined && changes.length > 0)
    options.onChange(changes.map((change) => change.key));
}

/** The definition as a projection into SQLite (documents as JSON text). */
export function sqliteDocumentProjection(
  definition: DocumentProjectionDefinition,
  options: DocumentProjectionOptions = {},
): Projection<SqliteDatabase> {
  checkDefinition(definition);
  return {
    name: definition.name,
    version: definition.version,
    ...eventsOfInterest(definition),
    setup(db, version) {
      const table = documentTable(definition.name, version);
      db.exec(`CREATE TABLE ${table} (collection TEXT NOT NULL, id TEXT NOT NULL, lookup TEXT, doc TEXT NOT NULL,
                 PRIMARY KEY (collection, id)) WITHOUT ROWID;
               CREATE INDEX ${table}_lookup ON ${table} (collection, lookup) WHERE lookup IS NOT NULL;`);
    },
    applyBatch(db, events, version) {
      const table = documentTable(definition.name, version);
      const select = db.prepare(`SELECT doc FROM ${table} WHERE collection = ? AND id = ?`);
      const loaded = new Map<string, unknown>();
      for (const { collection, id } of declaredKeys(definition, events)) {
        const row = select.get(collection, id);
        if (row !== undefined) loaded.set(keyOf(collection, id), JSON.parse(row.doc as string));
      }
      const upsert = db.prepare(
        `INSERT INTO ${table} (collection, id, lookup, doc) VALUES (?, ?, ?, ?)
         ON CONFLICT (collection, id) DO UPDATE SET lookup = excluded.lookup, doc = excluded.doc`,
      );
      const remove = db.prepare(`DELETE FROM ${table} WHERE collection = ? AND id = ?`);
      const changes = applyInMemory(definition, events, loaded);
      for (const { key, doc, lookup } of changes) {
        if (doc === undefined) remove.run(key.collection, key.id);
        else upsert.run(key.collection, key.id, lookup, JSON.stringify(doc));
      }
      db.afterCommit(() => notify(options, changes));
    },
    teardown(db, version) {
      db.exec(`DROP TABLE IF EXISTS ${documentTable(definition.name, version)}`);
    },
  };
}

/** The definition as a projection into PostgreSQL (jsonb documents in `schema`): two round trips per batch. */
export interface PostgresDocumentProjectionOptions extends DocumentProjectionOptions {
  readonly schema: string;
  /**
   * Announces each batch's changed documents with NOTIFY on this channel, inside the batch's transaction: other
   * processes hear them once the batch committed, and never for one rolled back, so a reader there that caches
   * documents until they change can trust what it hears, and take the new content from the announcement instead of
   * reading it. Each payload is a JSON array of AnnouncedChange (as many notifications as it takes), or
   * ALL_DOCUMENTS.
   */
  readonly notifyChannel?: string;
  /**
   * The schema of the views' registry (the PostgresProjectionTarget's), where an announcement looks up whether the
   * version writing serves reads; default `schema`.
   */
  readonly registrySchema?: string;
}

/**
 * A document a batch changed, as announced on a notifyChannel: its new content in `doc`, or `deleted`; neither when
 * the content was too big to announce or the version that wrote it does not serve reads (read it again).
 */
export interface AnnouncedChange extends DocumentKey {
  readonly doc?: unknown;
  readonly deleted?: true;
}

/** The payload of a change notification that names no documents: any may have changed. */
export const ALL_DOCUMENTS = '*';

/** NOTIFY payloads stop short of 8000 bytes. */
const MAX_PAYLOAD = 7900;

/**
 * The notifications announcing `changes` (`docs`: each put's JSON, by index): entries packed into as few payloads as
 * fit, with their content when `withContent` and it fits.
 */
function announcements(
  changes: readonly Change[],
  docs: readonly (string | undefined)[],
  withContent: boolean,
) {
  const payloads: string[] = [];
  let entries: string[] = [];
  let bytes = 2;
  const flush = () => {
    if (entries.length > 0) payloads.push(`[${entries.join(',')}]`);
    entries = [];
    bytes = 2;
  };
  for (const [i, { key }] of changes.entries()) {
    const keyJson = `"collection":${JSON.stringify(key.collection)},"id":${JSON.stringify(key.id)}`;
    let entry = `{${keyJson}}`;
    if (withContent) {
      const doc = docs[i];
      const full = doc === undefined ? `{${keyJson},"deleted":true}` : `{${keyJson},"doc":${doc}}`;
      if (Buffer.byteLength(full) + 2 <= MAX_PAYLOAD) entry = full;
    }
    const size = Buffer.byteLength(entry);
    if (size + 2 > MAX_PAYLOAD) {
      // Even its key does not fit: say that anything may have changed.
      payloads.push(ALL_DOCUMENTS);
      continue;
    }
    if (bytes + size + 1 > MAX_PAYLOAD) flush();
    entries.push(entry);
    bytes += size + 1;
  }
  flush();
  return payloads;
}

/** Texts prepared so far, by text: the name each is prepared under. */
const preparedNames = new Map<string, string>();

/**
 * A statement prepared on each connection the first time it runs there (named after its text), so that it is parsed
 * once and planned like any prepared statement rather than on every call: parsing and planning a batch's load and
 * write cost more than running them.
 */
function prepared(text: string): { name: string; text: string } {
  let name = preparedNames.get(text);
  if (name === undefined) {
    name = `stratus_doc_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return { name, text };
}

export function postgresDocumentProjection(
  definition: DocumentProjectionDefinition,
  options: PostgresDocumentProjectionOptions,
): Projection<PoolClient> {
  checkDefinition(definition);
  for (const [name, value] of [
    ['schema', options.schema],
    ['registrySchema', options.registrySchema ?? options.schema],
  ] as const) {
    assertSchemaName(name, value);
  }
  const { notifyChannel, registrySchema = options.schema } = options;
  if (notifyChannel !== undefined && (typeof notifyChannel !== 'string' || notifyChannel.length === 0))
    throw new InvalidOptionsError('notifyChannel', 'expected a channel name');
  const table = (version: number) => `"${options.schema}".${documentTable(definition.name, version)}`;
  return {
    name: definition.name,
    version: definition.version,
    ...eventsOfInterest(definition),
    async setup(client, version) {
      await client.query(`CREATE TABLE ${table(version)} (collection text NOT NULL, id text NOT NULL, lookup text,
                            doc jsonb NOT NULL, PRIMARY KEY (collection, id));
                          CREATE INDEX ON ${table(version)} (collection, lookup) WHERE lookup IS NOT NULL;`);
    },
    async applyBatch(client, events, version) {
      const keys = declaredKeys(definition, events);
      // One index probe per key: the statement keeps one generic plan per connection (see prepared), and a join
      // planned while the table was empty would scan all of it for every batch once it is not.
      const { rows } = await client.query<{ collection: string; id: string; doc: unknown }>({
        ...prepared(
          `SELECT t.collection, t.id, t.doc FROM unnest($1::text[], $2::text[]) AS k(collection, id)
             JOIN LATERAL (SELECT * FROM ${table(version)} d
                            WHERE d.collection = k.collection AND d.id = k.id LIMIT 1) t ON true`,
        ),
        values: [keys.map((key) => key.collection), keys.map((key) => key.id)],
        types: postgresTypes,
      });
      const loaded = new Map(rows.map((row) => [keyOf(row.collection, row.id), row.doc]));
      const changes = applyInMemory(definition, events, loaded);
      const docs = changes.map((change) =>
        change.doc === undefined ? undefined : JSON.stringify(change.doc),
      );
      if (changes.length > 0) {
        const puts = changes.filter((change) => change.doc !== undefined);
        const deletes = changes.filter((change) => change.doc === undefined);
        const written = [
          puts.map((change) => change.key.collection),
          puts.map((change) => change.key.id),
          puts.map((change) => change.lookup),
          docs.filter((doc) => doc !== undefined),
        ];
        // Rare (a view deleting documents), and planned on each call: a generic plan, kept per connection, would be
        // the one made when the table was small (a scan of all of it).
        if (deletes.length > 0)
          await client.query(
            `DELETE FROM ${table(version)} t USING unnest($1::text[], $2::text[]) AS k(collection, id)
              WHERE t.collection = k.collection AND t.id = k.id`,
            [deletes.map((change) => change.key.collection), deletes.map((change) => change.key.id)],
          );
        // One round trip: the upserts run as a data-modifying part of the announcing statement. Contents are announced
        // only by the version serving reads, as this transaction sees it (its commit locked the row).
        const announcing =
          notifyChannel === undefined
            ? { text: 'SELECT 1', values: [] }
            : {
                text: `SELECT pg_notify($5, p) FROM unnest(
                   CASE WHEN (SELECT status FROM "${registrySchema}".es_views WHERE name = $6 AND version = $7)
                     = 'active' THEN $8::text[] ELSE $9::text[] END) AS p`,
                values: [
                  notifyChannel,
                  definition.name,
                  version,
                  announcements(changes, docs, true),
                  announcements(changes, docs, false),
                ],
              };
        await client.query({
          ...prepared(`WITH upserted AS (
             INSERT INTO ${table(version)} (collection, id, lookup, doc)
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])
             ON CONFLICT (collection, id) DO UPDATE SET lookup = excluded.lookup, doc = excluded.doc
           )
           ${announcing.text}`),
          values: [...written, ...announcing.values],
        });
      }
      notify(options, changes);
    },
    async teardown(client, version) {
      await client.query(`DROP TABLE IF EXISTS ${table(version)}`);
    },
  };
}

/**
 * Part of a collection in id order, for paging by cursor: at most `limit` documents, those right after the id
 * `after` (from the first when it is omitted), or those right before the id `before`. Either way they come in id
 * order, and the read costs an index range, whatever the size of the collection.
 */
export type DocumentSlice =
  | { readonly limit: number; readonly after?: string; readonly before?: undefined }
  | { readonly limit: number; readonly before: string; readonly after?: undefined };

/** Reads a document view: the version that serves reads (looked up again at most once a second). */
export interface DocumentReader {
  get<T>(collection: string, id: string): Promise<T | undefined>;
  /**
   * The documents of `collection` with this lookup key (all of the collection when it is omitted), by id; with a
   * slice, only that part of them.
   */
  find<T>(collection: string, lookup?: string, slice?: DocumentSlice): Promise<T[]>;
}

/** The SQL of a find; `placeholder` writes the parameter of a position (1-based) as the database wants it. */
function findQuery(
  table: string,
  collection: string,
  lookup: string | undefined,
  slice: DocumentSlice | undefined,
  placeholder: (position: number) => string,
): { text: string; values: (string | number)[] } {
  const values: (string | number)[] = [];
  const where: string[] = [];
  const add = (condition: string, value: string) => {
    values.push(value);
    where.push(`${condition} ${placeholder(values.length)}`);
  };
  add('collection =', collection);
  if (lookup !== undefined) add('lookup =', lookup);
  if (slice === undefined)
    return { text: `SELECT doc FROM ${table} WHERE ${where.join(' AND ')} ORDER BY id`, values };
  if (!Number.isInteger(slice.limit) || slice.limit < 1)
    throw new InvalidOptionsError('slice.limit', `expected a whole number ≥ 1, got ${slice.limit}`);
  if (slice.before !== undefined) add('id <', slice.before);
  else if (slice.after !== undefined) add('id >', slice.after);
  values.push(slice.limit);
  // Cast for SQLite, whose planner would otherwise re-prepare the statement on every new limit (see SQLITE_LIMIT).
  const limit = `LIMIT CAST(${placeholder(values.length)} AS BIGINT)`;
  const condition = where.join(' AND ');
  if (slice.before === undefined)
    return { text: `SELECT doc FROM ${table} WHERE ${condition} ORDER BY id ${limit}`, values };
  // The nearest ones before the cursor, read backwards along the index, then put back in id order.
  const nearest = `SELECT id, doc FROM ${table} WHERE ${condition} ORDER BY id DESC ${limit}`;
  return { text: `SELECT doc FROM (${nearest}) AS slice ORDER BY id`, values };
}

const ACTIVE_VERSION_TTL_MS = 1000;

/** Caches the active version briefly: a blue/green switch reaches readers within a second. */
function activeVersionCache<Tx>(
  target: ProjectionTarget<Tx>,
  name: string,
): () => Promise<number | undefined> {
  let cached: { version: number | undefined; until: number } | undefined;
  return async () => {
    const now = Date.now();
    if (cached === undefined || cached.until <= now || cached.version === undefined) {
      cached = { version: await activeVersion(target, name), until: now + ACTIVE_VERSION_TTL_MS };
    }
    return cached.version;
  };
}

export function sqliteDocumentReader(
  database: SqliteDatabase,
  target: ProjectionTarget<SqliteDatabase>,
  name: string,
): DocumentReader {
  const version = activeVersionCache(target, name);
  return {
    async get<T>(collection: string, id: string) {
      const active = await version();
      if (active === undefined) return undefined;
      const row = database
        .prepare(`SELECT doc FROM ${documentTable(name, active)} WHERE collection = ? AND id = ?`)
        .get(collection, id);
      return row === undefined ? undefined : (JSON.parse(row.doc as string) as T);
    },
    async find<T>(collection: string, lookup?: string, slice?: DocumentSlice) {
      const active = await version();
      if (active === undefined) return [];
      const { text, values } = findQuery(documentTable(name, active), collection, lookup, slice, () => '?');
      const rows = database.prepare(text).all(...values);
      return rows.map((row) => JSON.parse(row.doc as string) as T);
    },
  };
}

export function postgresDocumentReader(
  pool: Pool,
  target: ProjectionTarget<PoolClient>,
  name: string,
  options: { readonly schema: string },
): DocumentReader {
  const version = activeVersionCache(target, name);
  const table = (active: number) => `"${options.schema}".${documentTable(name, active)}`;
  return {
    async get<T>(collection: string, id: string) {
      const active = await version();
      if (active === undefined) return undefined;
      const { rows } = await pool.query<{ doc: T }>({
        ...prepared(`SELECT doc FROM ${table(active)} WHERE collection = $1 AND id = $2`),
        values: [collection, id],
        types: postgresTypes,
      });
      return rows[0]?.doc;
    },
    async find<T>(collection: string, lookup?: string, slice?: DocumentSlice) {
      const active = await version();
      if (active === undefined) return [];
      const { text, values } = findQuery(table(active), collection, lookup, slice, (index) => `$${index}`);
      const { rows } = await pool.query<{ doc: T }>({ ...prepared(text), values, types: postgresTypes });
      return rows.map((row) => row.doc);
    },
  };
}
