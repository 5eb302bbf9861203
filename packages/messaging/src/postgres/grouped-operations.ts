// Group commit of the PostgreSQL backend's sends, receives and completes: concurrent calls on a queue share one.
import { KeyedGroupCommit } from '@stratus/sql';
import type {
  OutgoingMessage,
  ReceiveRequest,
  ReceiveResult,
  SendOutcome,
  SettleOutcome,
} from '../backend.js';
import { type PostgresConnection, sqlState } from './connection.js';
import { parseTokens } from './lock-tokens.js';
import { type DeliveredRow, messageColumns, type NextDueRow, receiveResults } from './rows.js';
import type { Statements } from './statements.js';

/**
 * Requests with fewer items than this are group-committed; larger ones already amortise their round trip and go
 * on their own, in parallel with the groups.
 */
const GROUP_BELOW = 16;
/** SQLSTATE class 22 (data exception): one caller's bad value, not a fault of the whole group. */
const DATA_EXCEPTION = /^22/;

interface SendRequest {
  readonly messages: readonly OutgoingMessage[];
  readonly now: number;
}
interface CompleteRequest {
  readonly tokens: readonly string[];
  readonly now: number;
}

/**
 * Those arriving while one call for their queue is in flight go together in the next one (one round trip, one
 * transaction), each caller getting its own result.
 */
export class GroupedOperations {
  readonly #connection: PostgresConnection;
  readonly #sql: Statements;
  readonly #sends = new KeyedGroupCommit<SendRequest, SendOutcome[] | Error>((queue, batch) =>
    this.#flushSends(queue, batch),
  );
  readonly #completes = new KeyedGroupCommit<CompleteRequest, SettleOutcome[]>((queue, batch) =>
    this.#flushCompletes(queue, batch),
  );
  readonly #receives = new KeyedGroupCommit<ReceiveRequest, ReceiveResult>((queue, batch) =>
    this.#flushReceives(queue, batch),
  );

  constructor(connection: PostgresConnection, sql: Statements) {
    this.#connection = connection;
    this.#sql = sql;
  }

  async send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    const request = { messages, now };
    if (messages.length === 0 || messages.length >= GROUP_BELOW) {
      return (await this.#sendTogether(queue, [request]))[0] as SendOutcome[];
    }
    const outcome = await this.#sends.submit(queue, request);
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    if (request.max >= GROUP_BELOW) return (await this.#flushReceives(queue, [request]))[0] as ReceiveResult;
    return this.#receives.submit(queue, request);
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    const request = { tokens: lockTokens, now };
    if (lockTokens.length >= GROUP_BELOW)
      return (await this.#flushCompletes(queue, [request]))[0] as SettleOutcome[];
    return this.#completes.submit(queue, request);
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
    const rows = await this.#connection.query<{ ord: number; sequence: string }>(
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
        columns.bodyStarts,
        columns.bodyLengths,
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
    const rows = await this.#connection.query<DeliveredRow | NextDueRow>(
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
    const rows = await this.#connection.query<{ lock_token: string }>(
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
}
