import { randomId } from '@stratus/core';
import { fileKey, migrateSqlite, type SqliteDatabase, WatchHub } from '@stratus/sql';
import type {
  DeadLetter,
  DeadLetterQuery,
  MessageBackend,
  OutgoingMessage,
  PeekQuery,
  PublishOutcome,
  QueueSettings,
  QueueStats,
  ReceiveRequest,
  ReceiveResult,
  ReplayFrom,
  SendOutcome,
  SettleOutcome,
  StoredMessage,
  Subscription,
  TopicSettings,
} from '../backend.js';
import { UnknownQueueError } from '../errors.js';
import { listDeadLetters, purgeDeadLetters, resendDeadLetters } from './dead-letters.js';
import { abandonNow, completeNow, deadLetterNow, receiveNow, renewNow } from './delivery.js';
import { BackendClosedError, TooManyQueuesError } from './errors.js';
import { EAGER, type SqliteMessageBackendOptions, setUpSqliteBackend } from './options.js';
import { QueueRows } from './queue-rows.js';
import { earliest, stored } from './rows.js';
import { MESSAGING_MIGRATIONS } from './schema.js';
import {
  MAX_QUEUE_ID,
  type MessageRow,
  type ProbeRow,
  type QueueRow,
  SQL,
  type StatsRow,
} from './statements.js';
import { SqliteTopics } from './topics.js';

export { BackendClosedError, QueueFullError, TooManyQueuesError } from './errors.js';
export type { SqliteMessageBackendOptions } from './options.js';

/**
 * The embedded default backend: queues and topics in one SQLite file that any number of processes may share.
 * Every operation that changes state is one `BEGIN IMMEDIATE` transaction, so processes serialise on SQLite's
 * write lock, waiting for it up to the busy timeout without blocking the event loop (transactionAsync); WAL lets
 * readers run alongside. Statements are prepared once, and each receive, settle or send batch is a handful of
 * index seeks.
 */
export class SqliteMessageBackend implements MessageBackend {
  readonly kind = 'sqlite';
  readonly sessionBatches = true;
  readonly database: SqliteDatabase;
  readonly #owned: boolean;
  readonly #hub: WatchHub;
  readonly #rows: QueueRows;
  readonly #topics: SqliteTopics;
  #migrated = false;
  #closed = false;

  constructor(options: SqliteMessageBackendOptions) {
    const { database, owned, watchIntervalMs } = setUpSqliteBackend(options);
    this.database = database;
    this.#owned = owned;
    this.#hub = new WatchHub(
      fileKey(this.database.path),
      this.database,
      (queue) => this.#db().prepare(SQL.queueSignal).get<{ signal: string }>(queue)?.signal,
      watchIntervalMs,
    );
    this.#rows = new QueueRows(database, this.#hub, randomId(6));
    this.#topics = new SqliteTopics(this.#rows);
  }

  async putQueue(name: string, settings: QueueSettings): Promise<void> {
    const db = this.#db();
    const text = JSON.stringify(settings);
    await db.transactionAsync(() => {
      if (db.prepare(SQL.updateQueue).run(text, name).changes > 0) return;
      const id = db.prepare(SQL.freeQueueId).get<{ id: number }>()?.id as number;
      if (id > MAX_QUEUE_ID) throw new TooManyQueuesError(MAX_QUEUE_ID);
      db.prepare(SQL.insertQueue).run(id, name, text);
    });
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    const row = this.#db().prepare(SQL.queue).get<QueueRow>(name);
    return row === undefined ? undefined : this.#rows.parseSettings(row.settings);
  }

  async listQueues(): Promise<string[]> {
    return this.#db()
      .prepare(SQL.listQueues)
      .all<{ name: string }>()
      .map((row) => row.name)
      .sort();
  }

  async deleteQueue(name: string): Promise<boolean> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const row = db.prepare(SQL.queue).get<QueueRow>(name);
      if (row === undefined) return false;
      const { first, last } = this.#rows.context(name, row);
      db.prepare(SQL.deleteMessages).run(first, last);
      db.prepare(SQL.deleteDuplicates).run(row.id);
      db.prepare(SQL.deleteSessions).run(row.id);
      db.prepare(SQL.unsubscribe).run(name);
      db.prepare(SQL.deleteQueue).run(row.id);
      return true;
    });
  }

  async send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    const db = this.#db();
    const rows = this.#rows;
    return db.transactionAsync(() => {
      const row = db.prepare(SQL.sendQueue).get<QueueRow & { last: number }>(queue);
      if (row === undefined) throw new UnknownQueueError(queue);
      const context = rows.context(queue, row);
      context.sequence = row.last;
      const outcomes = messages.map((message) => rows.store(context, message, now));
      rows.sweepIds(now);
      rows.finish(context);
      return outcomes;
    }, EAGER);
  }

  async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    const db = this.#db();
    const { now } = request;
    // An idle queue is answered from a read, so idle consumers never queue up for the write lock.
    const probe = db.prepare(SQL.probe).get<ProbeRow>(queue);
    if (probe === undefined) throw new UnknownQueueError(queue);
    const nextDue = earliest(probe);
    if (probe.available === 0 && (nextDue === undefined || nextDue > now)) {
      return { messages: [], nextDueAt: nextDue };
    }
    return db.transactionAsync(() => receiveNow(this.#rows, queue, request));
  }

  async renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]> {
    return this.#db().transactionAsync(() => renewNow(this.#rows, queue, lockTokens, lockMs, now));
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    return this.#db().transactionAsync(() => completeNow(this.#rows, queue, lockTokens, now));
  }

  async completeAndReceive(
    queue: string,
    lockToken: string,
    request: ReceiveRequest,
  ): Promise<{ outcome: SettleOutcome; received: ReceiveResult }> {
    return this.#db().transactionAsync(() => {
      const [outcome] = completeNow(this.#rows, queue, [lockToken], request.now) as [SettleOutcome];
      const received =
        outcome === 'ok' ? receiveNow(this.#rows, queue, request) : { messages: [], nextDueAt: undefined };
      return { outcome, received };
    });
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    return this.#db().transactionAsync(() => abandonNow(this.#rows, queue, lockToken, delayMs, now));
  }

  async deadLetter(
    queue: string,
    lockToken: string,
    reason: string,
    description: string | undefined,
    now: number,
  ): Promise<SettleOutcome> {
    return this.#db().transactionAsync(() =>
      deadLetterNow(this.#rows, queue, lockToken, reason, description, now),
    );
  }

  async peek(queue: string, query: PeekQuery): Promise<StoredMessage[]> {
    const db = this.#db();
    const { first, last } = this.#rows.load(queue);
    return db
      .prepare(SQL.peek)
      .all<MessageRow>(Math.max(first, query.afterSequence ?? 0), last, query.limit)
      .map(stored);
  }

  /**
   * `oldestAgeMs` reads the enqueue time of the live message with the lowest sequence (the first of the queue's
   * range that is not a dead letter): that is the oldest one as long as the senders' clocks agree, which the port
   * already requires.
   */
  async stats(queue: string, now: number): Promise<QueueStats> {
    const db = this.#db();
    const { id, first, last } = this.#rows.load(queue);
    const row = db.prepare(SQL.stats).get<StatsRow>(id, id, id, id, id, first, last) as StatsRow;
    return {
      available: row.available,
      scheduled: row.scheduled,
      locked: row.locked,
      waiting: row.waiting,
      deadLettered: row.dead,
      length: row.available + row.scheduled + row.locked + row.waiting,
      oldestAgeMs: row.oldest === null ? 0 : Math.max(0, now - row.oldest),
    };
  }

  async listDeadLetters(queue: string, query: DeadLetterQuery): Promise<DeadLetter[]> {
    this.#db();
    return listDeadLetters(this.#rows, queue, query);
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    return this.#db().transactionAsync(() => resendDeadLetters(this.#rows, queue, sequences, now));
  }

  async purgeDeadLetters(
    queue: string,
    sequences: readonly number[] | undefined,
    now: number,
  ): Promise<number> {
    return this.#db().transactionAsync(() => purgeDeadLetters(this.#rows, queue, sequences, now));
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    const db = this.#db();
    const context = this.#rows.load(queue);
    return db.prepare(SQL.sessionState).get<{ state: Uint8Array }>(context.id, sessionId)?.state;
  }

  async setSessionState(queue: string, sessionId: string, state: Uint8Array | undefined): Promise<void> {
    const db = this.#db();
    await db.transactionAsync(() => {
      const context = this.#rows.load(queue);
      if (state === undefined) db.prepare(SQL.clearSessionState).run(context.id, sessionId);
      else db.prepare(SQL.putSessionState).run(context.id, sessionId, state);
    });
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    this.#db();
    this.#topics.put(name, settings);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    this.#db();
    return this.#topics.get(name);
  }

  async listTopics(): Promise<string[]> {
    this.#db();
    return this.#topics.list();
  }

  async deleteTopic(name: string): Promise<boolean> {
    this.#db();
    return this.#topics.delete(name);
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    this.#db();
    await this.#topics.subscribe(subscription, replay, now);
  }

  async unsubscribe(queue: string): Promise<boolean> {
    this.#db();
    return this.#topics.unsubscribe(queue);
  }

  async listSubscriptions(): Promise<Subscription[]> {
    this.#db();
    return this.#topics.listSubscriptions();
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    this.#db();
    return this.#topics.publish(topic, messages, now);
  }

  watch(queue: string, listener: () => void): () => void {
    this.#db();
    return this.#hub.watch(queue, listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#hub.close();
    if (this.#owned) this.database.close();
  }

  /** The database, with the messaging schema in place. */
  #db(): SqliteDatabase {
    if (this.#closed) throw new BackendClosedError(this.kind);
    if (!this.#migrated) {
      migrateSqlite(this.database, 'messaging', MESSAGING_MIGRATIONS);
      this.#migrated = true;
    }
    return this.database;
  }
}
