import { checkPostgresConnection } from '@stratus/sql';
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
import { STRICT_PRIORITY_STEP } from '../backend.js';
import { UnknownTopicError } from '../errors.js';
import { PostgresConnection, sqlState } from './connection.js';
import { GroupedOperations } from './grouped-operations.js';
import { LOCK_TOKEN, parseTokens } from './lock-tokens.js';
import type { PostgresMessageBackendOptions } from './options.js';
import {
  type DeliveredRow,
  type ListedRow,
  messageColumns,
  type NextDueRow,
  type QueueRow,
  queueSettings,
  receiveResults,
  stored,
} from './rows.js';
import { UNKNOWN_TOPIC_SQLSTATE } from './sql-parts.js';
import { type Statements, statements } from './statements.js';
import { topicPatternRegex } from './topic-regex.js';

export type { PostgresMessageBackendOptions } from './options.js';

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
  readonly #connection: PostgresConnection;
  readonly #grouped: GroupedOperations;
  readonly #sql: Statements;

  constructor(options: PostgresMessageBackendOptions) {
    const setup = checkPostgresConnection(options);
    this.schema = setup.schema;
    this.#sql = statements(setup.schema);
    this.#connection = new PostgresConnection(setup);
    this.#grouped = new GroupedOperations(this.#connection, this.#sql);
  }

  /** Creates or upgrades the schema now (otherwise the first operation does). Safe to run from many processes. */
  async migrate(): Promise<void> {
    await this.#connection.ensureReady();
  }

  async putQueue(name: string, settings: QueueSettings): Promise<void> {
    const { priority } = settings;
    await this.#connection.query(this.#sql.putQueue, [
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
      settings.onSessionDeadLetter,
    ]);
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    const [row] = await this.#connection.query<QueueRow>(this.#sql.getQueue, [name]);
    return row === undefined ? undefined : queueSettings(row);
  }

  async listQueues(): Promise<string[]> {
    return (await this.#connection.query<{ name: string }>(this.#sql.listQueues, [])).map((row) => row.name);
  }

  async deleteQueue(name: string): Promise<boolean> {
    const [row] = await this.#connection.query<{ deleted: boolean }>(this.#sql.deleteQueue, [name]);
    return row?.deleted === true;
  }

  send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    return this.#grouped.send(queue, messages, now);
  }

  receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    return this.#grouped.receive(queue, request);
  }

  async renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]> {
    const { sequences, uuids, byPosition } = parseTokens(lockTokens);
    const rows = await this.#connection.query<{ lock_token: string; locked_until: number }>(
      this.#sql.renew,
      [queue, sequences, uuids, lockMs, now],
      queue,
    );
    const renewed = new Map(rows.map((row) => [row.lock_token, row.locked_until]));
    return byPosition.map((uuid) => (uuid === undefined ? undefined : renewed.get(uuid)));
  }

  complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    return this.#grouped.complete(queue, lockTokens, now);
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
    const rows = await this.#connection.query<DeliveredRow | NextDueRow>(
      this.#sql.completeAndReceive,
      [queue, token[1], token[2], max, lockMs, now, sessionBatch],
      queue,
    );
    if (rows[0]?.slot === 0) return lost;
    return { outcome: 'ok', received: receiveResults(rows, 1)[0] as ReceiveResult };
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    const token = LOCK_TOKEN.exec(lockToken);
    const [row] = await this.#connection.query<{ ok: boolean }>(
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
    const [row] = await this.#connection.query<{ ok: boolean }>(
      this.#sql.deadLetter,
      [queue, token?.[1] ?? '0', token?.[2] ?? null, reason, description ?? null, now],
      queue,
    );
    return row?.ok === true ? 'ok' : 'lost';
  }

  async peek(queue: string, query: PeekQuery): Promise<StoredMessage[]> {
    const rows = await this.#connection.query<ListedRow>(
      this.#sql.listMessages,
      [queue, false, query.afterSequence ?? 0, query.limit],
      queue,
    );
    return rows.map((row) => stored(row, row.state));
  }

  async stats(queue: string, now: number): Promise<QueueStats> {
    const [row] = await this.#connection.query<{
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
    const rows = await this.#connection.query<ListedRow>(
      this.#sql.listMessages,
      [queue, true, query.afterSequence ?? 0, query.limit],
      queue,
    );
    return rows.map((row) =>
      Object.assign(stored(row, 'dead'), {
        deadLetterReason: row.dead_reason ?? '',
        deadLetterDescription: row.dead_description ?? undefined,
        deadLetteredAt: row.dead_at ?? 0,
        holdsSession: row.holds_session,
      }),
    );
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    const [row] = await this.#connection.query<{ resent: number }>(
      this.#sql.resend,
      [queue, sequences, now],
      queue,
    );
    return row?.resent ?? 0;
  }

  async purgeDeadLetters(
    queue: string,
    sequences: readonly number[] | undefined,
    now: number,
  ): Promise<number> {
    const [row] = await this.#connection.query<{ purged: number }>(
      this.#sql.purge,
      [queue, sequences ?? null, now],
      queue,
    );
    return row?.purged ?? 0;
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    const [row] = await this.#connection.query<{ state: Buffer }>(
      this.#sql.getSessionState,
      [queue, sessionId],
      queue,
    );
    return row?.state;
  }

  async setSessionState(queue: string, sessionId: string, state: Uint8Array | undefined): Promise<void> {
    await this.#connection.query(this.#sql.setSessionState, [queue, sessionId, state ?? null], queue);
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    await this.#connection.query(this.#sql.putTopic, [name, settings.retentionMs]);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    const [row] = await this.#connection.query<{ retention_ms: number }>(this.#sql.getTopic, [name]);
    return row === undefined ? undefined : { retentionMs: row.retention_ms };
  }

  async listTopics(): Promise<string[]> {
    return (await this.#connection.query<{ name: string }>(this.#sql.listTopics, [])).map((row) => row.name);
  }

  async deleteTopic(name: string): Promise<boolean> {
    const [row] = await this.#connection.query<{ deleted: boolean }>(this.#sql.deleteTopic, [name]);
    return row?.deleted === true;
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const since = replay === 'none' ? null : replay === 'retained' ? Number.NEGATIVE_INFINITY : replay.since;
    await this.#connection.query(
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
    const [row] = await this.#connection.query<{ deleted: boolean }>(this.#sql.unsubscribe, [queue]);
    return row?.deleted === true;
  }

  async listSubscriptions(): Promise<Subscription[]> {
    const rows = await this.#connection.query<{
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
      rows = await this.#connection.query(this.#sql.publish, [
        topic,
        columns.ids,
        columns.bodies,
        columns.props,
        columns.priorities,
        columns.sessionIds,
        columns.availableAts,
        columns.expiresAts,
        now,
        columns.bodyStarts,
        columns.bodyLengths,
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
    return this.#connection.watch(queue, listener);
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}
