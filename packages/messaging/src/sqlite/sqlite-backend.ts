import { assertDuration, assertObject, InvalidOptionsError, randomId, StratusError } from '@stratus/core';
import {
  fileKey,
  migrateSqlite,
  type OpenSqliteOptions,
  openSqlite,
  type SqliteDatabase,
  WatchHub,
} from '@stratus/sql';
import {
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
  type DeadLetter,
  type DeadLetterQuery,
  type DeliveredMessage,
  type MessageBackend,
  type MessageFilter,
  type MessageState,
  type OutgoingMessage,
  type PeekQuery,
  type PriorityPolicy,
  type PublishOutcome,
  type QueueSettings,
  type QueueStats,
  type ReceiveRequest,
  type ReceiveResult,
  type ReplayFrom,
  rankOf,
  type SendOutcome,
  type SettleOutcome,
  STRICT_PRIORITY_STEP,
  type StoredMessage,
  type Subscription,
  type TopicSettings,
} from '../backend.js';
import { UnknownQueueError, UnknownTopicError } from '../errors.js';
import { subscriptionMatches } from '../routing.js';
import { MESSAGING_MIGRATIONS } from './schema.js';
import {
  type DueRow,
  MAX_QUEUE_ID,
  type MessageRow,
  type ProbeRow,
  QUEUE_RANGE,
  type QueueRow,
  type RetainedRow,
  SQL,
  type StatsRow,
  type SubscriptionRow,
  SWEEP_EVERY,
} from './statements.js';

export interface SqliteMessageBackendOptions {
  /** A database file to open (created if missing); the backend owns it and closes it on close(). */
  path?: string;
  /**
   * A database you opened with openSqlite or wrapSqlite; the backend never closes it. Share it with your own
   * tables to send messages in the same transaction as your writes (see SqliteDatabase.transaction).
   */
  database?: SqliteDatabase;
  /** Driver, synchronous, busyTimeoutMs and checkpoint for a `path` (see openSqlite). */
  driver?: OpenSqliteOptions['driver'];
  synchronous?: OpenSqliteOptions['synchronous'];
  busyTimeoutMs?: number;
  checkpoint?: OpenSqliteOptions['checkpoint'];
  /**
   * Group commit for a `path` (see openSqlite): the sends, receives and settlements of one event-loop turn share one
   * write transaction. Default true: 50 producers each awaiting its own send stored 61.6 k messages/s with it and
   * 27.7 k without (one commit each), and one producer sending back to back ran as fast either way.
   */
  groupCommit?: boolean;
  /**
   * How often a backend with watchers checks whether another process committed (PRAGMA data_version), in ms.
   * Watchers in this process are woken at once regardless. Default 25.
   */
  watchIntervalMs?: number;
}

/** Queue ids are limited (each owns a range of 2^32 sequences below 2^53): this many queues exist already. */
export class TooManyQueuesError extends StratusError {
  constructor(max: number) {
    super('ERR_STRATUS_TOO_MANY_QUEUES', `A SQLite message database holds at most ${max} queues at a time`);
  }
}

/** The queue used up its 2^32 sequences; deleting and recreating it starts a new range. */
export class QueueFullError extends StratusError {
  readonly queue: string;
  constructor(queue: string) {
    super('ERR_STRATUS_QUEUE_FULL', `Queue "${queue}" has used all of its ${QUEUE_RANGE} sequences`);
    this.queue = queue;
  }
}

/** The backend was closed; it no longer touches its database. */
export class BackendClosedError extends StratusError {
  constructor(kind: string) {
    super('ERR_STRATUS_BACKEND_CLOSED', `The ${kind} message backend is closed`);
  }
}

/** A queue loaded inside a transaction; `#finish` tells watchers what the operation changed. */
interface QueueContext {
  readonly id: number;
  readonly name: string;
  readonly settings: QueueSettings;
  /** The queue's sequence range (inclusive). */
  readonly first: number;
  readonly last: number;
  /** The last sequence handed out in this transaction; read on first use. */
  sequence: number | undefined;
  /** Messages were sent: wake this process's watchers after commit (other processes see a new sequence). */
  wake: boolean;
  /** Messages became available otherwise: also bump the queue's signal for watchers in other processes. */
  signal: boolean;
}

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
  #migrated = false;
  #closed = false;
  /** Lock tokens are `<sequence>.<this backend's random prefix><counter>`: unique, and they locate their row. */
  readonly #tokenPrefix = randomId(6);
  #tokenCounter = 0;
  readonly #settings = new Map<string, QueueSettings>();
  #subscriptions = new Map<string, Subscription>();
  /** Ids recorded since the last sweep of the duplicate table, and where the next sweep starts. */
  #idsSinceSweep = 0;
  #sweepFrom: [number, string] = [0, ''];

  constructor(options: SqliteMessageBackendOptions) {
    assertObject('options', options as unknown);
    const {
      path,
      database,
      driver,
      synchronous,
      busyTimeoutMs,
      checkpoint,
      groupCommit = true,
      watchIntervalMs = 25,
    } = options;
    assertDuration('watchIntervalMs', watchIntervalMs, { allowZero: false });
    if ((path === undefined) === (database === undefined)) {
      throw new InvalidOptionsError('path', 'give either a path or a database');
    }
    if (database !== undefined) {
      if (typeof (database as Partial<SqliteDatabase>)?.transactionAsync !== 'function') {
        throw new InvalidOptionsError(
          'database',
          'expected a SqliteDatabase (see openSqlite and wrapSqlite)',
        );
      }
      this.database = database;
      this.#owned = false;
    } else {
      this.database = openSqlite(path as string, {
        driver,
        synchronous,
        busyTimeoutMs,
        checkpoint,
        groupCommit,
      });
      this.#owned = true;
    }
    this.#hub = new WatchHub(
      fileKey(this.database.path),
      this.database,
      (queue) => this.#db().prepare(SQL.queueSignal).get<{ signal: string }>(queue)?.signal,
      watchIntervalMs,
    );
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
    return row === undefined ? undefined : this.#parseSettings(row.settings);
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
      const { first, last } = this.#context(name, row);
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
    return db.transactionAsync(() => {
      const row = db.prepare(SQL.sendQueue).get<QueueRow & { last: number }>(queue);
      if (row === undefined) throw new UnknownQueueError(queue);
      const context = this.#context(queue, row);
      context.sequence = row.last;
      const outcomes = messages.map((message) => this.#store(context, message, now));
      this.#sweepIds(now);
      this.#finish(context);
      return outcomes;
    });
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
    return db.transactionAsync(() => this.#receiveNow(queue, request));
  }

  #receiveNow(queue: string, request: ReceiveRequest): ReceiveResult {
    const db = this.database;
    const { max, lockMs, now } = request;
    const context = this.#load(queue);
    this.#releaseDue(context, now);
    const messages: DeliveredMessage[] = [];
    const lockedUntil = now + lockMs;
    const pick = db.prepare(SQL.pick);
    const lock = db.prepare(SQL.lock);
    // Expired messages met on the way are dead-lettered and picking goes on (a dead session head may also
    // have let the next message of its session through).
    const lockRow = (row: MessageRow) => {
      const lockToken = `${row.sequence}.${this.#tokenPrefix}${(++this.#tokenCounter).toString(36)}`;
      lock.run(lockToken, lockedUntil, row.sequence);
      messages.push({
        ...stored(row),
        state: 'locked',
        deliveryCount: row.delivery_count + 1,
        lockToken,
        lockedUntil,
      });
    };
    const batch = request.sessionBatch ?? 1;
    let heads = 0;
    for (let expired = true; expired && heads < max; ) {
      expired = false;
      for (const row of pick.all<MessageRow>(context.id, max - heads)) {
        if (row.expires_at !== null && row.expires_at <= now) {
          this.#kill(context, row.sequence, row.session, DEAD_LETTER_EXPIRED, undefined, now);
          expired = true;
          continue;
        }
        lockRow(row);
        heads++;
        if (row.session === null || batch <= 1) continue;
        const followers = db.prepare(SQL.followers).all<MessageRow>(context.id, row.session, batch - 1);
        for (const follower of followers) {
          const expires = follower.expires_at;
          if (follower.available_at > now || (expires !== null && expires <= now)) break;
          lockRow(follower);
        }
      }
    }
    const nextDueAt = messages.length > 0 ? undefined : this.#nextDue(context);
    this.#finish(context);
    return { messages, nextDueAt };
  }

  async renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const context = this.#load(queue);
      const renew = db.prepare(SQL.renew);
      const lockedUntil = now + lockMs;
      return lockTokens.map((token) => {
        const sequence = tokenSequence(token);
        if (sequence === undefined) return undefined;
        return renew.run(lockedUntil, sequence, context.id, token).changes === 1 ? lockedUntil : undefined;
      });
    });
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    return this.#db().transactionAsync(() => this.#completeNow(queue, lockTokens, now));
  }

  async completeAndReceive(
    queue: string,
    lockToken: string,
    request: ReceiveRequest,
  ): Promise<{ outcome: SettleOutcome; received: ReceiveResult }> {
    return this.#db().transactionAsync(() => {
      const [outcome] = this.#completeNow(queue, [lockToken], request.now) as [SettleOutcome];
      const received =
        outcome === 'ok' ? this.#receiveNow(queue, request) : { messages: [], nextDueAt: undefined };
      return { outcome, received };
    });
  }

  #completeNow(queue: string, lockTokens: readonly string[], now: number): SettleOutcome[] {
    const context = this.#load(queue);
    const complete = this.database.prepare(SQL.complete);
    let highest = 0;
    const outcomes = lockTokens.map((token): SettleOutcome => {
      const sequence = tokenSequence(token);
      const row =
        sequence === undefined
          ? undefined
          : complete.get<{ session: string | null }>(sequence, context.id, token);
      if (sequence === undefined || row === undefined) return 'lost';
      highest = Math.max(highest, sequence);
      if (row.session !== null) this.#advanceSession(context, row.session, now);
      return 'ok';
    });
    this.#deleted(context, highest);
    this.#finish(context);
    return outcomes;
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const context = this.#load(queue);
      const sequence = tokenSequence(lockToken);
      const row =
        sequence === undefined
          ? undefined
          : db
              .prepare(SQL.locked)
              .get<{ delivery_count: number; priority: number; session: string | null }>(
                sequence,
                context.id,
                lockToken,
              );
      if (sequence === undefined || row === undefined) return 'lost';
      this.#unlock(context, { ...row, sequence }, now + delayMs, now);
      this.#finish(context);
      return 'ok';
    });
  }

  async deadLetter(
    queue: string,
    lockToken: string,
    reason: string,
    description: string | undefined,
    now: number,
  ): Promise<SettleOutcome> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const context = this.#load(queue);
      const sequence = tokenSequence(lockToken);
      const row =
        sequence === undefined
          ? undefined
          : db.prepare(SQL.locked).get<{ session: string | null }>(sequence, context.id, lockToken);
      if (sequence === undefined || row === undefined) return 'lost';
      this.#kill(context, sequence, row.session, reason, description, now);
      this.#finish(context);
      return 'ok';
    });
  }

  async peek(queue: string, query: PeekQuery): Promise<StoredMessage[]> {
    const { first, last } = this.#load(queue);
    return this.#db()
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
    const { id, first, last } = this.#load(queue);
    const row = this.#db().prepare(SQL.stats).get<StatsRow>(id, id, id, id, id, first, last) as StatsRow;
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
    const context = this.#load(queue);
    return this.#db()
      .prepare(SQL.deadLetters)
      .all<MessageRow>(context.id, query.afterSequence ?? 0, query.limit)
      .map((row) => ({
        ...stored(row),
        deadLetterReason: row.dead_reason as string,
        deadLetterDescription: row.dead_description ?? undefined,
        deadLetteredAt: row.dead_at as number,
      }));
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const context = this.#load(queue);
      let resent = 0;
      for (const sequence of [...sequences].sort((a, b) => a - b)) {
        const row = db
          .prepare(SQL.deadLetter)
          .get<{ priority: number; session: string | null }>(context.id, sequence);
        if (row === undefined) continue;
        const placement =
          row.session !== null && this.#sessionBusy(context, row.session)
            ? waitingPlacement(now)
            : this.#placement(context, row.priority, now, now);
        db.prepare(SQL.resend).run(
          placement.state,
          placement.availableAt,
          placement.rank,
          placement.dueAt,
          sequence,
        );
        resent++;
      }
      if (resent > 0) context.signal = true;
      this.#finish(context);
      return resent;
    });
  }

  async purgeDeadLetters(queue: string, sequences: readonly number[] | undefined): Promise<number> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const context = this.#load(queue);
      if (sequences === undefined) {
        const highest = db.prepare(SQL.highestDead).get<{ highest: number | null }>(context.id)?.highest;
        const purged = db.prepare(SQL.deleteDead).run(context.id).changes;
        this.#deleted(context, highest ?? 0);
        return purged;
      }
      const purge = db.prepare(SQL.purgeOne);
      let purged = 0;
      let highest = 0;
      for (const sequence of sequences) {
        if (purge.run(context.id, sequence).changes === 0) continue;
        purged++;
        highest = Math.max(highest, sequence);
      }
      this.#deleted(context, highest);
      return purged;
    });
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    const context = this.#load(queue);
    return this.#db().prepare(SQL.sessionState).get<{ state: Uint8Array }>(context.id, sessionId)?.state;
  }

  async setSessionState(queue: string, sessionId: string, state: Uint8Array | undefined): Promise<void> {
    const db = this.#db();
    await db.transactionAsync(() => {
      const context = this.#load(queue);
      if (state === undefined) db.prepare(SQL.clearSessionState).run(context.id, sessionId);
      else db.prepare(SQL.putSessionState).run(context.id, sessionId, state);
    });
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    this.#db().prepare(SQL.putTopic).run(name, settings.retentionMs);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    const row = this.#db().prepare(SQL.topic).get<{ retention_ms: number }>(name);
    return row === undefined ? undefined : { retentionMs: row.retention_ms };
  }

  async listTopics(): Promise<string[]> {
    return this.#db()
      .prepare(SQL.listTopics)
      .all<{ name: string }>()
      .map((row) => row.name)
      .sort();
  }

  async deleteTopic(name: string): Promise<boolean> {
    const db = this.#db();
    return db.transactionAsync(() => {
      db.prepare(SQL.deleteRetained).run(name);
      return db.prepare(SQL.deleteTopic).run(name).changes > 0;
    });
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const db = this.#db();
    await db.transactionAsync(() => {
      const context = this.#load(subscription.queue);
      db.prepare(SQL.subscribe).run(
        subscription.queue,
        JSON.stringify(subscription.topics),
        subscription.filter === undefined ? null : JSON.stringify(subscription.filter),
      );
      if (replay === 'none') return;
      const since = replay === 'retained' ? Number.MIN_SAFE_INTEGER : replay.since;
      for (const row of db.prepare(SQL.replay).all<RetainedRow>(since, now)) {
        const message = retainedMessage(row);
        if (subscriptionMatches(subscription, row.topic, message)) this.#store(context, message, now);
      }
      this.#finish(context);
    });
  }

  async unsubscribe(queue: string): Promise<boolean> {
    return this.#db().prepare(SQL.unsubscribe).run(queue).changes > 0;
  }

  async listSubscriptions(): Promise<Subscription[]> {
    // Copies: the parsed ones are kept for publish.
    return this.#loadSubscriptions()
      .map((subscription) => structuredClone(subscription))
      .sort((a, b) => (a.queue < b.queue ? -1 : 1));
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    const db = this.#db();
    return db.transactionAsync(() => {
      const settings = db.prepare(SQL.topic).get<{ retention_ms: number }>(topic);
      if (settings === undefined) throw new UnknownTopicError(topic);
      const subscriptions = this.#loadSubscriptions();
      const contexts = new Map<string, QueueContext>();
      const outcomes = messages.map((message) => {
        const deliveredTo: string[] = [];
        for (const subscription of subscriptions) {
          if (!subscriptionMatches(subscription, topic, message)) continue;
          let context = contexts.get(subscription.queue);
          if (context === undefined) {
            context = this.#load(subscription.queue);
            contexts.set(subscription.queue, context);
          }
          if (this.#store(context, message, now).accepted) deliveredTo.push(subscription.queue);
        }
        if (settings.retention_ms > 0) this.#retain(topic, message, now);
        return { id: message.id, deliveredTo };
      });
      db.prepare(SQL.pruneRetained).run(topic, now - settings.retention_ms);
      this.#sweepIds(now);
      for (const context of contexts.values()) this.#finish(context);
      return outcomes;
    });
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

  #load(name: string): QueueContext {
    const row = this.#db().prepare(SQL.queue).get<QueueRow>(name);
    if (row === undefined) throw new UnknownQueueError(name);
    return this.#context(name, row);
  }

  #context(name: string, row: QueueRow): QueueContext {
    return {
      id: row.id,
      name,
      settings: this.#parseSettings(row.settings),
      first: row.id * QUEUE_RANGE,
      last: row.id * QUEUE_RANGE + QUEUE_RANGE - 1,
      sequence: undefined,
      wake: false,
      signal: false,
    };
  }

  /** Tells watchers (after commit) that messages may have become available. */
  #finish(context: QueueContext): void {
    if (context.signal) this.database.prepare(SQL.bumpSignal).run(context.id);
    if (context.wake || context.signal) this.database.afterCommit(() => this.#hub.notify(context.name));
  }

  /** The sequence of the queue's next message, above every sequence it ever used. */
  #nextSequence(context: QueueContext): number {
    context.sequence ??= this.database.prepare(SQL.lastSequence).get<{ last: number }>(context.id)
      ?.last as number;
    if (context.sequence >= context.last) throw new QueueFullError(context.name);
    return ++context.sequence;
  }

  /** After deleting messages up to sequence `highest`: if none higher is left, remember it so it is not reused. */
  #deleted(context: QueueContext, highest: number): void {
    if (highest === 0) return;
    const left =
      this.database.prepare(SQL.highestSequence).get<{ highest: number | null }>(context.first, context.last)
        ?.highest ?? 0;
    if (left < highest) this.database.prepare(SQL.rememberDeleted).run(highest, context.id, highest);
  }

  #parseSettings(text: string): QueueSettings {
    let settings = this.#settings.get(text);
    if (settings === undefined) {
      const raw = JSON.parse(text) as QueueSettings;
      // Rebuilt field by field: JSON drops `defaultTtlMs: undefined`, and the port's shape must come back whole.
      settings = {
        lockDurationMs: raw.lockDurationMs,
        maxDeliveryCount: raw.maxDeliveryCount,
        duplicateWindowMs: raw.duplicateWindowMs,
        defaultTtlMs: raw.defaultTtlMs ?? undefined,
        maxMessageBytes: raw.maxMessageBytes,
        priority: raw.priority,
        sessions: raw.sessions,
      };
      this.#settings.set(text, settings);
    }
    return settings;
  }

  #store(context: QueueContext, message: OutgoingMessage, now: number): SendOutcome {
    const db = this.database;
    const { settings } = context;
    if (settings.duplicateWindowMs > 0) {
      this.#idsSinceSweep++;
      const recorded = db
        .prepare(SQL.recordId)
        .run(context.id, message.id, now + settings.duplicateWindowMs, now).changes;
      if (recorded === 0) return { id: message.id, accepted: false, sequence: undefined };
    }
    const sequence = this.#nextSequence(context);
    const priority = message.priority ?? 0;
    const expiresAt =
      message.expiresAt ?? (settings.defaultTtlMs === undefined ? null : now + settings.defaultTtlMs);
    const session = settings.sessions ? (message.sessionId ?? null) : null;
    const availableAt = message.availableAt ?? now;
    const placement =
      session !== null && this.#sessionBusy(context, session)
        ? waitingPlacement(availableAt)
        : this.#placement(context, priority, availableAt, now);
    db.prepare(SQL.insert).run(
      sequence,
      context.id,
      placement.state,
      placement.rank,
      placement.dueAt,
      placement.availableAt,
      expiresAt,
      now,
      priority,
      session,
      message.id,
      message.sessionId ?? null,
      message.contentType ?? null,
      message.correlationId ?? null,
      message.replyTo ?? null,
      message.subject ?? null,
      message.headers === undefined ? null : JSON.stringify(message.headers),
      message.body,
    );
    context.wake = true;
    return { id: message.id, accepted: true, sequence };
  }

  /** Deletes expired duplicate-window entries from the next slice of the table (see SWEEP_EVERY). */
  #sweepIds(now: number): void {
    if (this.#idsSinceSweep < SWEEP_EVERY) return;
    this.#idsSinceSweep = 0;
    const db = this.database;
    const [queue, id] = this.#sweepFrom;
    const end = db.prepare(SQL.sweepEnd).get<{ queue: number; id: string }>(queue, id);
    if (end === undefined) {
      db.prepare(SQL.sweepRest).run(queue, id, now);
      this.#sweepFrom = [0, ''];
    } else {
      db.prepare(SQL.sweepSlice).run(queue, id, end.queue, end.id, now);
      this.#sweepFrom = [end.queue, end.id];
    }
  }

  #sessionBusy(context: QueueContext, session: string): boolean {
    return this.database.prepare(SQL.sessionHead).get(context.id, session) !== undefined;
  }

  /** Where a message that may be delivered from `availableAt` goes: scheduled, or available with its rank. */
  #placement(context: QueueContext, priority: number, availableAt: number, now: number): Placement {
    return availableAt > now
      ? { state: 'scheduled', availableAt, rank: null, dueAt: availableAt }
      : {
          state: 'available',
          availableAt,
          rank: rankOf(availableAt, priority, context.settings.priority),
          dueAt: null,
        };
  }

  #makeDeliverable(
    context: QueueContext,
    sequence: number,
    priority: number,
    availableAt: number,
    now: number,
  ): void {
    const placement = this.#placement(context, priority, availableAt, now);
    this.database
      .prepare(SQL.makeDeliverable)
      .run(placement.state, placement.availableAt, placement.rank, placement.dueAt, sequence);
    context.signal = true;
  }

  #kill(
    context: QueueContext,
    sequence: number,
    session: string | null,
    reason: string,
    description: string | undefined,
    now: number,
  ): void {
    this.database.prepare(SQL.kill).run(reason, description ?? null, now, sequence);
    if (session !== null) this.#advanceSession(context, session, now);
  }

  /**
   * A locked message goes back (abandoned, or its lock expired): dead-lettered past its last delivery, else
   * deliverable from `availableAt`. In a session the messages locked behind it go back to waiting, and so does it
   * while an earlier message of its session is still held: only a session's first message is ever deliverable.
   */
  #unlock(context: QueueContext, row: LockedRow, availableAt: number, now: number): void {
    const db = this.database;
    const { sequence, session } = row;
    if (session !== null) db.prepare(SQL.releaseFollowers).run(context.id, session, sequence);
    if (row.delivery_count >= context.settings.maxDeliveryCount) {
      this.#kill(context, sequence, session, DEAD_LETTER_MAX_DELIVERIES, undefined, now);
    } else if (
      session !== null &&
      db.prepare(SQL.heldBefore).get(context.id, session, sequence) !== undefined
    ) {
      db.prepare(SQL.toWaiting).run(sequence);
    } else {
      this.#makeDeliverable(context, sequence, row.priority, availableAt, now);
    }
  }

  /**
   * A message of the session left (completed or dead): once none of its messages is held, the next waiting one
   * becomes its head.
   */
  #advanceSession(context: QueueContext, session: string, now: number): void {
    if (this.#sessionBusy(context, session)) return;
    const next = this.database
      .prepare(SQL.nextWaiting)
      .get<{ sequence: number; available_at: number; priority: number }>(context.id, session);
    if (next === undefined) return;
    this.#makeDeliverable(context, next.sequence, next.priority, Math.max(next.available_at, now), now);
  }

  /** Due scheduled messages become available; expired locks come back or, past the last delivery, die. */
  #releaseDue(context: QueueContext, now: number): void {
    const db = this.database;
    const due = db.prepare(SQL.nextDue).get<DueRow>(context.id, context.id) as DueRow;
    const step = priorityStep(context.settings.priority);
    if (due.scheduled !== null && due.scheduled <= now) {
      for (const { session } of db
        .prepare(SQL.killExpiredScheduled)
        .all<{ session: string | null }>(DEAD_LETTER_EXPIRED, now, context.id, now, now)) {
        if (session !== null) this.#advanceSession(context, session, now);
      }
      db.prepare(SQL.releaseScheduled).run(step, context.id, now);
    }
    if (due.locked !== null && due.locked <= now) {
      const maxDeliveries = context.settings.maxDeliveryCount;
      db.prepare(SQL.killExhaustedLocks).run(DEAD_LETTER_MAX_DELIVERIES, now, context.id, now, maxDeliveries);
      db.prepare(SQL.releaseLocks).run(step, context.id, now);
      const locked = db.prepare(SQL.locked);
      for (const row of db
        .prepare(SQL.expiredSessionLocks)
        .all<LockedRow & { lock_token: string; due_at: number }>(context.id, now)) {
        // An earlier message of its session may have sent it back to waiting already in this pass.
        if (locked.get(row.sequence, context.id, row.lock_token) === undefined) continue;
        this.#unlock(context, row, row.due_at, now);
      }
    }
  }

  #nextDue(context: QueueContext): number | undefined {
    return earliest(this.database.prepare(SQL.nextDue).get<DueRow>(context.id, context.id) as DueRow);
  }

  /** Every subscription, parsed once per change (publish reads them all each time). */
  #loadSubscriptions(): Subscription[] {
    const previous = this.#subscriptions;
    this.#subscriptions = new Map();
    return this.#db()
      .prepare(SQL.subscriptions)
      .all<SubscriptionRow>()
      .map((row) => {
        const key = `${row.queue}\n${row.topics}\n${row.filter}`;
        const subscription = previous.get(key) ?? {
          queue: row.queue,
          topics: JSON.parse(row.topics) as string[],
          filter: row.filter === null ? undefined : (JSON.parse(row.filter) as MessageFilter),
        };
        this.#subscriptions.set(key, subscription);
        return subscription;
      });
  }

  #retain(topic: string, message: OutgoingMessage, now: number): void {
    this.database
      .prepare(SQL.retain)
      .run(
        topic,
        now,
        message.id,
        message.availableAt ?? null,
        message.expiresAt ?? null,
        message.priority ?? null,
        message.sessionId ?? null,
        message.contentType ?? null,
        message.correlationId ?? null,
        message.replyTo ?? null,
        message.subject ?? null,
        message.headers === undefined ? null : JSON.stringify(message.headers),
        message.body,
      );
  }
}

/** When the next scheduled message falls due or lock expires; undefined when there is none. */
function earliest(due: DueRow): number | undefined {
  if (due.scheduled === null) return due.locked ?? undefined;
  return due.locked === null ? due.scheduled : Math.min(due.scheduled, due.locked);
}

/** What settling a locked message needs to know of it. */
interface LockedRow {
  sequence: number;
  delivery_count: number;
  priority: number;
  session: string | null;
}

interface Placement {
  state: MessageState;
  availableAt: number;
  rank: number | null;
  dueAt: number | null;
}

/** Behind its session's head: keeps the time it asked to be available from, for when its turn comes. */
function waitingPlacement(availableAt: number): Placement {
  return { state: 'waiting', availableAt, rank: null, dueAt: null };
}

function priorityStep(policy: PriorityPolicy): number {
  return policy.policy === 'strict' ? STRICT_PRIORITY_STEP : policy.agingMs;
}

/** The message a lock token was issued for; undefined for a string that is not one of our tokens. */
function tokenSequence(token: string): number | undefined {
  const dot = token.indexOf('.');
  const sequence = dot > 0 ? Number(token.slice(0, dot)) : Number.NaN;
  return Number.isSafeInteger(sequence) ? sequence : undefined;
}

function stored(row: MessageRow): StoredMessage {
  return {
    id: row.id,
    contentType: row.content_type ?? undefined,
    correlationId: row.correlation_id ?? undefined,
    replyTo: row.reply_to ?? undefined,
    subject: row.subject ?? undefined,
    headers: row.headers === null ? undefined : (JSON.parse(row.headers) as Record<string, string>),
    sessionId: row.session_id ?? undefined,
    priority: row.priority,
    body: row.body,
    sequence: row.sequence,
    enqueuedAt: row.enqueued_at,
    availableAt: row.available_at,
    expiresAt: row.expires_at ?? undefined,
    deliveryCount: row.delivery_count,
    state: row.state,
  };
}

function retainedMessage(row: RetainedRow): OutgoingMessage {
  return {
    id: row.id,
    body: row.body,
    availableAt: row.available_at ?? undefined,
    expiresAt: row.expires_at ?? undefined,
    priority: row.priority ?? undefined,
    sessionId: row.session_id ?? undefined,
    contentType: row.content_type ?? undefined,
    correlationId: row.correlation_id ?? undefined,
    replyTo: row.reply_to ?? undefined,
    subject: row.subject ?? undefined,
    headers: row.headers === null ? undefined : (JSON.parse(row.headers) as Record<string, string>),
  };
}
