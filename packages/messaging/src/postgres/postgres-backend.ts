import { assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import {
  assertSchemaName,
  GroupCommit,
  migratePostgres,
  NotificationListener,
  postgresTypes,
} from '@stratus/sql';
import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import {
  type DeadLetter,
  type DeadLetterQuery,
  type DeliveredMessage,
  type MessageBackend,
  type MessageState,
  type OutgoingMessage,
  type PeekQuery,
  type PublishOutcome,
  type QueueSettings,
  type QueueStats,
  type ReceiveRequest,
  type ReceiveResult,
  type ReplayFrom,
  type SendOutcome,
  type SettleOutcome,
  STRICT_PRIORITY_STEP,
  type StoredMessage,
  type Subscription,
  type TopicSettings,
} from '../backend.js';
import { UnknownQueueError, UnknownTopicError } from '../errors.js';
import { channelOf, migrations, UNKNOWN_QUEUE_SQLSTATE, UNKNOWN_TOPIC_SQLSTATE } from './schema.js';
import { topicPatternRegex } from './topic-regex.js';

export interface PostgresMessageBackendOptions {
  /** Your pg Pool: the backend never ends it. The LISTEN connection for `watch` is taken from it. */
  pool?: Pool;
  /** Or a connection string: the backend creates its own pool and ends it on close. */
  connectionString?: string;
  /** Connections of the pool created from `connectionString`; default 10. */
  poolSize?: number;
  /** Schema holding the tables and functions, created and migrated on first use; default 'stratus'. */
  schema?: string;
}

/** `<sequence>:<uuid>`: the sequence finds the row by primary key, the uuid identifies the delivery. */
const LOCK_TOKEN = /^(\d{1,19}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
/**
 * Requests with fewer items than this are group-committed; larger ones already amortise their round trip and go
 * on their own, in parallel with the groups.
 */
const GROUP_BELOW = 16;
/** SQLSTATE class 22 (data exception): one caller's bad value, not a fault of the whole group. */
const DATA_EXCEPTION = /^22/;

/** The properties kept as JSON beside the body. */
interface Props {
  contentType?: string;
  correlationId?: string;
  replyTo?: string;
  subject?: string;
  headers?: Record<string, string>;
  sessionId?: string;
}

interface MessageRow {
  sequence: string;
  id: string;
  body: Buffer;
  props: Props | null;
  priority: number;
  enqueued_at: number;
  available_at: number;
  expires_at: number | null;
  delivery_count: number;
}
interface DeliveredRow extends MessageRow {
  slot: number;
  lock_token: string;
  locked_until: number;
}
/** A slot that got nothing: only when to look again. */
interface NextDueRow {
  slot: number;
  sequence: null;
  next_due_at: number;
}
interface ListedRow extends MessageRow {
  state: MessageState;
  dead_reason: string | null;
  dead_description: string | null;
  dead_at: number | null;
}
interface QueueRow {
  lock_duration_ms: number;
  max_delivery_count: number;
  duplicate_window_ms: number;
  default_ttl_ms: number | null;
  max_message_bytes: number;
  priority_policy: 'strict' | 'weighted';
  aging_ms: number | null;
  sessions: boolean;
}

interface SendRequest {
  readonly messages: readonly OutgoingMessage[];
  readonly now: number;
}
interface CompleteRequest {
  readonly tokens: readonly string[];
  readonly now: number;
}
interface Grouped<I, O> {
  readonly commit: GroupCommit<I, O>;
  /** Submitted and not yet answered. */
  callers: number;
}

/**
 * The message backend on PostgreSQL. Every operation is one call of a plpgsql function (schema.ts), so one round
 * trip and one transaction: receive claims with FOR UPDATE SKIP LOCKED, publish fans out and filters server-side,
 * and NOTIFY from inside the functions wakes watchers on commit. Concurrent sends, receives and completes on a
 * queue are group-committed: those arriving while one call is in flight go together in the next one (one round
 * trip, one transaction), each caller getting its own result.
 */
export class PostgresMessageBackend implements MessageBackend {
  readonly kind = 'postgres';
  readonly sessionBatches = true;
  readonly schema: string;
  /** How to create the pool the backend owns; undefined when the user gave theirs. */
  readonly #ownPool: { readonly connectionString: string; readonly max: number } | undefined;
  #pool: Pool | undefined;
  #ready: Promise<Pool> | undefined;
  readonly #listener: NotificationListener;
  readonly #sends = new Map<string, Grouped<SendRequest, SendOutcome[] | Error>>();
  readonly #completes = new Map<string, Grouped<CompleteRequest, SettleOutcome[]>>();
  readonly #receives = new Map<string, Grouped<ReceiveRequest, ReceiveResult>>();
  readonly #sql: ReturnType<typeof statements>;
  #closed = false;

  constructor(options: PostgresMessageBackendOptions) {
    assertObject('options', options as unknown);
    const { pool, connectionString, poolSize = 10, schema = 'stratus' } = options;
    if ((pool === undefined) === (connectionString === undefined)) {
      throw new InvalidOptionsError('pool', 'give either a pg Pool or a connectionString');
    }
    if (pool !== undefined && typeof (pool as { query?: unknown }).query !== 'function') {
      throw new InvalidOptionsError('pool', 'expected a pg Pool');
    }
    if (connectionString !== undefined && typeof connectionString !== 'string') {
      throw new InvalidOptionsError('connectionString', 'expected a string');
    }
    assertInteger('poolSize', poolSize, 1);
    assertSchemaName('schema', schema);
    this.#ownPool =
      pool === undefined ? { connectionString: connectionString as string, max: poolSize } : undefined;
    this.#pool = pool;
    this.schema = schema;
    this.#sql = statements(schema);
    this.#listener = new NotificationListener(
      async () => (await this.#ensureReady()).connect(),
      channelOf(schema),
    );
  }

  /** Creates or upgrades the schema now (otherwise the first operation does). Safe to run from many processes. */
  async migrate(): Promise<void> {
    await this.#ensureReady();
  }

  async putQueue(name: string, settings: QueueSettings): Promise<void> {
    const { priority } = settings;
    await this.#query(this.#sql.putQueue, [
      name,
      settings.lockDurationMs,
      settings.maxDeliveryCount,
      settings.duplicateWindowMs,
      settings.defaultTtlMs ?? null,
      settings.maxMessageBytes,
      priority.policy,
      priority.policy === 'weighted' ? priority.agingMs : null,
      priority.policy === 'weighted' ? priority.agingMs : STRICT_PRIORITY_STEP,
      settings.sessions,
    ]);
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    const [row] = await this.#query<QueueRow>(this.#sql.getQueue, [name]);
    if (row === undefined) return undefined;
    return {
      lockDurationMs: row.lock_duration_ms,
      maxDeliveryCount: row.max_delivery_count,
      duplicateWindowMs: row.duplicate_window_ms,
      defaultTtlMs: row.default_ttl_ms ?? undefined,
      maxMessageBytes: row.max_message_bytes,
      priority:
        row.priority_policy === 'weighted'
          ? { policy: 'weighted', agingMs: row.aging_ms as number }
          : { policy: 'strict' },
      sessions: row.sessions,
    };
  }

  async listQueues(): Promise<string[]> {
    return (await this.#query<{ name: string }>(this.#sql.listQueues, [])).map((row) => row.name);
  }

  async deleteQueue(name: string): Promise<boolean> {
    const [row] = await this.#query<{ deleted: boolean }>(this.#sql.deleteQueue, [name]);
    return row?.deleted === true;
  }

  async send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    const request = { messages, now };
    if (messages.length === 0 || messages.length >= GROUP_BELOW) {
      return (await this.#sendTogether(queue, [request]))[0] as SendOutcome[];
    }
    const outcome = await this.#submit(
      this.#sends,
      queue,
      (batch) => this.#flushSends(queue, batch),
      request,
    );
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    if (request.max >= GROUP_BELOW) return (await this.#flushReceives(queue, [request]))[0] as ReceiveResult;
    return this.#submit(this.#receives, queue, (batch) => this.#flushReceives(queue, batch), request);
  }

  async renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]> {
    const { sequences, uuids, byPosition } = parseTokens(lockTokens);
    const rows = await this.#query<{ lock_token: string; locked_until: number }>(
      this.#sql.renew,
      [queue, sequences, uuids, lockMs, now],
      queue,
    );
    const renewed = new Map(rows.map((row) => [row.lock_token, row.locked_until]));
    return byPosition.map((uuid) => (uuid === undefined ? undefined : renewed.get(uuid)));
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    const request = { tokens: lockTokens, now };
    if (lockTokens.length >= GROUP_BELOW)
      return (await this.#flushCompletes(queue, [request]))[0] as SettleOutcome[];
    return this.#submit(this.#completes, queue, (batch) => this.#flushCompletes(queue, batch), request);
  }

  async completeAndReceive(
    queue: string,
    lockToken: string,
    request: ReceiveRequest,
  ): Promise<{ outcome: SettleOutcome; received: ReceiveResult }> {
    const token = LOCK_TOKEN.exec(lockToken);
    const lost = { outcome: 'lost' as const, received: { messages: [], nextDueAt: undefined } };
    if (token === null) return lost;
    const { max, lockMs, now, sessionBatch = 1 } = request;
    const rows = await this.#query<DeliveredRow | NextDueRow>(
      this.#sql.completeAndReceive,
      [queue, token[1], token[2], max, lockMs, now, sessionBatch],
      queue,
    );
    if (rows[0]?.slot === 0) return lost;
    return { outcome: 'ok', received: receiveResults(rows, 1)[0] as ReceiveResult };
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    const token = LOCK_TOKEN.exec(lockToken);
    const [row] = await this.#query<{ ok: boolean }>(
      this.#sql.abandon,
      [queue, token?.[1] ?? '0', token?.[2] ?? null, delayMs, now],
      queue,
    );
    return row?.ok === true ? 'ok' : 'lost';
  }

  async deadLetter(
    queue: string,
    lockToken: string,
    reason: string,
    description: string | undefined,
    now: number,
  ): Promise<SettleOutcome> {
    const token = LOCK_TOKEN.exec(lockToken);
    const [row] = await this.#query<{ ok: boolean }>(
      this.#sql.deadLetter,
      [queue, token?.[1] ?? '0', token?.[2] ?? null, reason, description ?? null, now],
      queue,
    );
    return row?.ok === true ? 'ok' : 'lost';
  }

  async peek(queue: string, query: PeekQuery): Promise<StoredMessage[]> {
    const rows = await this.#query<ListedRow>(
      this.#sql.listMessages,
      [queue, false, query.afterSequence ?? 0, query.limit],
      queue,
    );
    return rows.map((row) => stored(row, row.state));
  }

  async stats(queue: string, now: number): Promise<QueueStats> {
    const [row] = await this.#query<{
      available: string;
      scheduled: string;
      locked: string;
      waiting: string;
      dead: string;
      oldest: number | null;
    }>(this.#sql.stats, [queue], queue);
    const counts = {
      available: Number(row?.available ?? 0),
      scheduled: Number(row?.scheduled ?? 0),
      locked: Number(row?.locked ?? 0),
      waiting: Number(row?.waiting ?? 0),
    };
    const oldest = row?.oldest ?? null;
    return {
      ...counts,
      deadLettered: Number(row?.dead ?? 0),
      length: counts.available + counts.scheduled + counts.locked + counts.waiting,
      oldestAgeMs: oldest === null ? 0 : Math.max(0, now - oldest),
    };
  }

  async listDeadLetters(queue: string, query: DeadLetterQuery): Promise<DeadLetter[]> {
    const rows = await this.#query<ListedRow>(
      this.#sql.listMessages,
      [queue, true, query.afterSequence ?? 0, query.limit],
      queue,
    );
    return rows.map((row) => ({
      ...stored(row, 'dead'),
      deadLetterReason: row.dead_reason ?? '',
      deadLetterDescription: row.dead_description ?? undefined,
      deadLetteredAt: row.dead_at ?? 0,
    }));
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    const [row] = await this.#query<{ resent: number }>(this.#sql.resend, [queue, sequences, now], queue);
    return row?.resent ?? 0;
  }

  async purgeDeadLetters(queue: string, sequences: readonly number[] | undefined): Promise<number> {
    const [row] = await this.#query<{ purged: number }>(this.#sql.purge, [queue, sequences ?? null], queue);
    return row?.purged ?? 0;
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    const [row] = await this.#query<{ state: Buffer }>(this.#sql.getSessionState, [queue, sessionId], queue);
    return row?.state;
  }

  async setSessionState(queue: string, sessionId: string, state: Uint8Array | undefined): Promise<void> {
    await this.#query(this.#sql.setSessionState, [queue, sessionId, state ?? null], queue);
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    await this.#query(this.#sql.putTopic, [name, settings.retentionMs]);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    const [row] = await this.#query<{ retention_ms: number }>(this.#sql.getTopic, [name]);
    return row === undefined ? undefined : { retentionMs: row.retention_ms };
  }

  async listTopics(): Promise<string[]> {
    return (await this.#query<{ name: string }>(this.#sql.listTopics, [])).map((row) => row.name);
  }

  async deleteTopic(name: string): Promise<boolean> {
    const [row] = await this.#query<{ deleted: boolean }>(this.#sql.deleteTopic, [name]);
    return row?.deleted === true;
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const since = replay === 'none' ? null : replay === 'retained' ? Number.NEGATIVE_INFINITY : replay.since;
    await this.#query(
      this.#sql.subscribe,
      [
        subscription.queue,
        subscription.topics,
        subscription.topics.map(topicPatternRegex),
        subscription.filter === undefined ? null : JSON.stringify(subscription.filter),
        since,
        now,
      ],
      subscription.queue,
    );
  }

  async unsubscribe(queue: string): Promise<boolean> {
    const [row] = await this.#query<{ deleted: boolean }>(this.#sql.unsubscribe, [queue]);
    return row?.deleted === true;
  }

  async listSubscriptions(): Promise<Subscription[]> {
    const rows = await this.#query<{
      queue: string;
      topics: string[];
      filter: Subscription['filter'] | null;
    }>(this.#sql.listSubscriptions, []);
    return rows.map((row) => ({ queue: row.queue, topics: row.topics, filter: row.filter ?? undefined }));
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    const columns = messageColumns(messages);
    let rows: { ord: number; queue: string }[];
    try {
      rows = await this.#query(this.#sql.publish, [
        topic,
        columns.ids,
        columns.bodies,
        columns.props,
        columns.priorities,
        columns.sessionIds,
        columns.availableAts,
        columns.expiresAts,
        now,
      ]);
    } catch (error) {
      if (sqlState(error) === UNKNOWN_TOPIC_SQLSTATE) throw new UnknownTopicError(topic);
      throw error;
    }
    const deliveredTo = messages.map((): string[] => []);
    for (const row of rows) deliveredTo[row.ord - 1]?.push(row.queue);
    return messages.map((message, i) => ({ id: message.id, deliveredTo: deliveredTo[i] as string[] }));
  }

  watch(queue: string, listener: () => void): () => void {
    return this.#listener.watch(queue, listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#listener.close();
    if (this.#ownPool !== undefined) {
      const pool = await this.#ready?.catch(() => undefined);
      await pool?.end();
    }
  }

  /** Submits to the queue's group commit, which lives while it has callers so that queues do not accumulate. */
  #submit<I, O>(
    groups: Map<string, Grouped<I, O>>,
    queue: string,
    flush: (batch: I[]) => Promise<O[]>,
    item: I,
  ): Promise<O> {
    let grouped = groups.get(queue);
    if (grouped === undefined) {
      grouped = { commit: new GroupCommit(flush), callers: 0 };
      groups.set(queue, grouped);
    }
    const current = grouped;
    current.callers++;
    return current.commit.submit(item).finally(() => {
      if (--current.callers === 0 && groups.get(queue) === current) groups.delete(queue);
    });
  }

  async #flushSends(queue: string, batch: SendRequest[]): Promise<(SendOutcome[] | Error)[]> {
    try {
      return await this.#sendTogether(queue, batch);
    } catch (error) {
      // A value PostgreSQL refuses (say a NUL character in an id) fails only the caller who sent it.
      if (batch.length === 1 || !DATA_EXCEPTION.test(sqlState(error) ?? '')) throw error;
      return Promise.all(
        batch.map((request) =>
          this.#sendTogether(queue, [request]).then(
            ([outcomes]) => outcomes as SendOutcome[],
            (single: unknown) => (single instanceof Error ? single : new Error(String(single))),
          ),
        ),
      );
    }
  }

  /** Sends the requests' messages in one call, in order, and cuts the outcomes back per request. */
  async #sendTogether(queue: string, requests: readonly SendRequest[]): Promise<SendOutcome[][]> {
    const messages = requests.flatMap((request) => request.messages);
    const columns = messageColumns(messages);
    const rows = await this.#query<{ ord: number; sequence: string }>(
      this.#sql.send,
      [
        queue,
        requests.flatMap((request) => request.messages.map(() => request.now)),
        columns.ids,
        columns.bodies,
        columns.props,
        columns.priorities,
        columns.sessionIds,
        columns.availableAts,
        columns.expiresAts,
      ],
      queue,
    );
    const accepted = new Map(rows.map((row) => [row.ord - 1, Number(row.sequence)]));
    let offset = 0;
    return requests.map((request) => {
      const outcomes = request.messages.map((message, i): SendOutcome => {
        const sequence = accepted.get(offset + i);
        return { id: message.id, accepted: sequence !== undefined, sequence };
      });
      offset += request.messages.length;
      return outcomes;
    });
  }

  async #flushReceives(queue: string, batch: ReceiveRequest[]): Promise<ReceiveResult[]> {
    const rows = await this.#query<DeliveredRow | NextDueRow>(
      this.#sql.receive,
      [
        queue,
        batch.map((request) => request.max),
        batch.map((request) => request.lockMs),
        batch.map((request) => request.now),
        batch.map((request) => request.sessionBatch ?? 1),
      ],
      queue,
    );
    return receiveResults(rows, batch.length);
  }

  async #flushCompletes(queue: string, batch: CompleteRequest[]): Promise<SettleOutcome[][]> {
    const tokens = batch.flatMap((request) => request.tokens);
    const nows = batch.flatMap((request) => request.tokens.map(() => request.now));
    const { sequences, uuids, byPosition } = parseTokens(tokens);
    const rows = await this.#query<{ lock_token: string }>(
      this.#sql.complete,
      [queue, sequences, uuids, nows.filter((_, position) => byPosition[position] !== undefined)],
      queue,
    );
    // A token given twice completes once: the first of its positions.
    const completed = new Set(rows.map((row) => row.lock_token));
    const done = new Set<number>();
    byPosition.forEach((uuid, position) => {
      if (uuid !== undefined && completed.delete(uuid)) done.add(position);
    });
    let offset = 0;
    return batch.map((request) => {
      const outcomes = request.tokens.map((_, i): SettleOutcome => (done.has(offset + i) ? 'ok' : 'lost'));
      offset += request.tokens.length;
      return outcomes;
    });
  }

  async #query<R extends QueryResultRow>(
    statement: { name: string; text: string },
    values: unknown[],
    queue?: string,
  ): Promise<R[]> {
    const pool = await this.#ensureReady();
    try {
      const config: QueryConfig = {
        name: statement.name,
        text: statement.text,
        values,
        types: postgresTypes,
      };
      return (await pool.query<R>(config)).rows;
    } catch (error) {
      if (queue !== undefined && sqlState(error) === UNKNOWN_QUEUE_SQLSTATE)
        throw new UnknownQueueError(queue);
      throw error;
    }
  }

  #ensureReady(): Promise<Pool> {
    this.#ready ??= this.#open().catch((error: unknown) => {
      this.#ready = undefined; // try again on the next call
      throw error;
    });
    return this.#ready;
  }

  async #open(): Promise<Pool> {
    if (this.#closed) throw new Error('The PostgreSQL message backend is closed');
    let pool = this.#pool;
    if (pool === undefined) {
      const { default: pg } = await import('pg');
      pool = new pg.Pool(this.#ownPool);
      // An idle connection that dies (server restart) is dropped by the pool; the next query opens a new one.
      pool.on('error', () => {});
      this.#pool = pool;
    }
    await migratePostgres(pool, this.schema, 'messaging', migrations(this.schema), 'migrations');
    return pool;
  }
}

function statements(schema: string) {
  const S = `"${schema}"`;
  const named = (key: string, text: string) => ({ name: `stratus_${schema}_${key}`, text });
  return {
    putQueue: named(
      'put_queue',
      `INSERT INTO ${S}.queues (name, lock_duration_ms, max_delivery_count, duplicate_window_ms, default_ttl_ms,
         max_message_bytes, priority_policy, aging_ms, priority_step, sessions)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (name) DO UPDATE SET lock_duration_ms = excluded.lock_duration_ms,
         max_delivery_count = excluded.max_delivery_count, duplicate_window_ms = excluded.duplicate_window_ms,
         default_ttl_ms = excluded.default_ttl_ms, max_message_bytes = excluded.max_message_bytes,
         priority_policy = excluded.priority_policy, aging_ms = excluded.aging_ms,
         priority_step = excluded.priority_step, sessions = excluded.sessions`,
    ),
    getQueue: named('get_queue', `SELECT * FROM ${S}.queues WHERE name = $1`),
    listQueues: named('list_queues', `SELECT name FROM ${S}.queues ORDER BY name COLLATE "C"`),
    deleteQueue: named('delete_queue', `SELECT ${S}.delete_queue($1) AS deleted`),
    send: named(
      'send',
      `SELECT ord, sequence FROM ${S}.send($1, $2::float8[], $3::text[], $4::bytea[], $5::json[], $6::smallint[],
         $7::text[], $8::float8[], $9::float8[])`,
    ),
    receive: named(
      'receive',
      `SELECT * FROM ${S}.receive_async_commit($1, $2::int[], $3::float8[], $4::float8[], $5::int[])`,
    ),
    renew: named(
      'renew',
      `SELECT lock_token, locked_until FROM ${S}.renew($1, $2::bigint[], $3::uuid[], $4, $5)`,
    ),
    complete: named(
      'complete',
      `SELECT lock_token FROM ${S}.complete($1, $2::bigint[], $3::uuid[], $4::float8[]) AS lock_token`,
    ),
    completeAndReceive: named(
      'complete_and_receive',
      `SELECT * FROM ${S}.complete_and_receive($1, $2, $3, $4, $5, $6, $7)`,
    ),
    abandon: named('abandon', `SELECT ${S}.abandon($1, $2, $3, $4, $5) AS ok`),
    deadLetter: named('dead_letter', `SELECT ${S}.dead_letter($1, $2, $3, $4, $5, $6) AS ok`),
    listMessages: named('list_messages', `SELECT * FROM ${S}.list_messages($1, $2, $3, $4)`),
    stats: named('stats', `SELECT * FROM ${S}.stats($1)`),
    resend: named('resend', `SELECT ${S}.resend($1, $2::bigint[], $3) AS resent`),
    purge: named('purge', `SELECT ${S}.purge($1, $2::bigint[]) AS purged`),
    getSessionState: named('get_session_state', `SELECT state FROM ${S}.get_session_state($1, $2)`),
    setSessionState: named('set_session_state', `SELECT ${S}.set_session_state($1, $2, $3)`),
    putTopic: named(
      'put_topic',
      `INSERT INTO ${S}.topics (name, retention_ms) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET retention_ms = excluded.retention_ms`,
    ),
    getTopic: named('get_topic', `SELECT retention_ms FROM ${S}.topics WHERE name = $1`),
    listTopics: named('list_topics', `SELECT name FROM ${S}.topics ORDER BY name COLLATE "C"`),
    deleteTopic: named('delete_topic', `SELECT ${S}.delete_topic($1) AS deleted`),
    subscribe: named('subscribe', `SELECT ${S}.subscribe($1, $2::text[], $3::text[], $4::jsonb, $5, $6)`),
    unsubscribe: named(
      'unsubscribe',
      `WITH gone AS (DELETE FROM ${S}.subscriptions s USING ${S}.queues q WHERE s.queue_id = q.id AND q.name = $1
         RETURNING 1)
       SELECT count(*) > 0 AS deleted FROM gone`,
    ),
    listSubscriptions: named(
      'list_subscriptions',
      // The topics as json: postgresTypes parses no arrays.
      `SELECT q.name AS queue, to_json(s.topics) AS topics, s.filter FROM ${S}.subscriptions s
       JOIN ${S}.queues q ON q.id = s.queue_id ORDER BY q.name COLLATE "C"`,
    ),
    publish: named(
      'publish',
      `SELECT ord, queue FROM ${S}.publish($1, $2::text[], $3::bytea[], $4::json[], $5::smallint[], $6::text[],
         $7::float8[], $8::float8[], $9)`,
    ),
  };
}

/** The messages as parallel arrays, one per column. */
function messageColumns(messages: readonly OutgoingMessage[]) {
  return {
    ids: messages.map((m) => m.id),
    bodies: messages.map((m) => m.body),
    props: messages.map(propsJson),
    priorities: messages.map((m) => m.priority ?? null),
    sessionIds: messages.map((m) => m.sessionId ?? null),
    availableAts: messages.map((m) => m.availableAt ?? null),
    expiresAts: messages.map((m) => m.expiresAt ?? null),
  };
}

function propsJson(message: OutgoingMessage): string | null {
  const props: Props = {};
  let any = false;
  for (const key of ['contentType', 'correlationId', 'replyTo', 'subject', 'sessionId'] as const) {
    const value = message[key];
    if (value !== undefined) {
      props[key] = value;
      any = true;
    }
  }
  if (message.headers !== undefined) {
    props.headers = message.headers as Record<string, string>;
    any = true;
  }
  return any ? JSON.stringify(props) : null;
}

/**
 * The well-formed tokens as the functions' arrays, and the delivery uuid at each position (undefined where the
 * token is not one of ours, which settles as lost).
 */
/** The rows of a receive for `slots` callers, as each caller's result. */
function receiveResults(rows: readonly (DeliveredRow | NextDueRow)[], slots: number): ReceiveResult[] {
  const results = Array.from(
    { length: slots },
    (): ReceiveResult => ({ messages: [], nextDueAt: undefined }),
  );
  for (const row of rows) {
    const slot = row.slot - 1;
    if (row.sequence === null) results[slot] = { messages: [], nextDueAt: row.next_due_at };
    else results[slot]?.messages.push(delivered(row));
  }
  return results;
}

function parseTokens(tokens: readonly string[]): {
  sequences: string[];
  uuids: string[];
  byPosition: (string | undefined)[];
} {
  const sequences: string[] = [];
  const uuids: string[] = [];
  const byPosition = tokens.map((token) => {
    const match = LOCK_TOKEN.exec(token);
    if (match === null) return undefined;
    sequences.push(match[1] as string);
    uuids.push(match[2] as string);
    return match[2] as string;
  });
  return { sequences, uuids, byPosition };
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function stored(row: MessageRow, state: MessageState): StoredMessage {
  const props = row.props ?? {};
  return {
    id: row.id,
    contentType: props.contentType,
    correlationId: props.correlationId,
    replyTo: props.replyTo,
    subject: props.subject,
    headers: props.headers,
    sessionId: props.sessionId,
    priority: row.priority,
    body: row.body,
    sequence: Number(row.sequence),
    enqueuedAt: row.enqueued_at,
    availableAt: row.available_at,
    expiresAt: row.expires_at ?? undefined,
    deliveryCount: row.delivery_count,
    state,
  };
}

function delivered(row: DeliveredRow): DeliveredMessage {
  return {
    ...stored(row, 'locked'),
    lockToken: `${row.sequence}:${row.lock_token}`,
    lockedUntil: row.locked_until,
  };
}
