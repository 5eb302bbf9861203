// A SQLite queue's rows inside a transaction: loading the queue, storing messages and moving them between states.
import type { SqliteDatabase, WatchHub } from '@stratus/sql';
import {
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
  holdsSession,
  type MessageState,
  type OutgoingMessage,
  type PriorityPolicy,
  type QueueSettings,
  rankOf,
  type SendOutcome,
  STRICT_PRIORITY_STEP,
} from '../backend.js';
import { UnknownQueueError } from '../errors.js';
import { QueueFullError } from './errors.js';
import { earliest, type LockedRow } from './rows.js';
import { type DueRow, QUEUE_RANGE, type QueueRow, SQL, SWEEP_EVERY } from './statements.js';

/** A queue loaded inside a transaction; `finish` tells watchers what the operation changed. */
export interface QueueContext {
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
 * The statements every operation shares, run inside the caller's transaction. Holds what outlives one
 * transaction: the parsed settings, the duplicate table's sweep position and the lock token counter.
 */
export class QueueRows {
  readonly database: SqliteDatabase;
  readonly #hub: WatchHub;
  /** Lock tokens are `<sequence>.<this backend's random prefix><counter>`: unique, and they locate their row. */
  readonly #tokenPrefix: string;
  #tokenCounter = 0;
  readonly #settings = new Map<string, QueueSettings>();
  /** Ids recorded since the last sweep of the duplicate table, and where the next sweep starts. */
  #idsSinceSweep = 0;
  #sweepFrom: [number, string] = [0, ''];

  constructor(database: SqliteDatabase, hub: WatchHub, tokenPrefix: string) {
    this.database = database;
    this.#hub = hub;
    this.#tokenPrefix = tokenPrefix;
  }

  /** A new lock token for the message at `sequence`. */
  lockToken(sequence: number): string {
    return `${sequence}.${this.#tokenPrefix}${(++this.#tokenCounter).toString(36)}`;
  }

  load(name: string): QueueContext {
    const row = this.database.prepare(SQL.queue).get<QueueRow>(name);
    if (row === undefined) throw new UnknownQueueError(name);
    return this.context(name, row);
  }

  context(name: string, row: QueueRow): QueueContext {
    return {
      id: row.id,
      name,
      settings: this.parseSettings(row.settings),
      first: row.id * QUEUE_RANGE,
      last: row.id * QUEUE_RANGE + QUEUE_RANGE - 1,
      sequence: undefined,
      wake: false,
      signal: false,
    };
  }

  /** Tells watchers (after commit) that messages may have become available. */
  finish(context: QueueContext): void {
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
  deleted(context: QueueContext, highest: number): void {
    if (highest === 0) return;
    const left =
      this.database.prepare(SQL.highestSequence).get<{ highest: number | null }>(context.first, context.last)
        ?.highest ?? 0;
    if (left < highest) this.database.prepare(SQL.rememberDeleted).run(highest, context.id, highest);
  }

  parseSettings(text: string): QueueSettings {
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
        // Queues stored before the setting existed get its default.
        onSessionDeadLetter: raw.onSessionDeadLetter ?? 'hold',
      };
      this.#settings.set(text, settings);
    }
    return settings;
  }

  store(context: QueueContext, message: OutgoingMessage, now: number): SendOutcome {
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
      session !== null && this.sessionBusy(context, session)
        ? waitingPlacement(availableAt)
        : this.placement(context, priority, availableAt, now);
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
  sweepIds(now: number): void {
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

  /** Whether the session has a head (a message available, scheduled or locked) or a dead letter holds it. */
  sessionBusy(context: QueueContext, session: string): boolean {
    const db = this.database;
    return (
      db.prepare(SQL.sessionHead).get(context.id, session) !== undefined ||
      db.prepare(SQL.sessionHeld).get(context.id, session) !== undefined
    );
  }

  /** Where a message that may be delivered from `availableAt` goes: scheduled, or available with its rank. */
  placement(context: QueueContext, priority: number, availableAt: number, now: number): Placement {
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
    const placement = this.placement(context, priority, availableAt, now);
    this.database
      .prepare(SQL.makeDeliverable)
      .run(placement.state, placement.availableAt, placement.rank, placement.dueAt, sequence);
    context.signal = true;
  }

  /** Dead-letters a message; one that holds its session (holdsSession) sends the messages locked behind it back. */
  kill(
    context: QueueContext,
    sequence: number,
    session: string | null,
    reason: string,
    description: string | undefined,
    now: number,
  ): void {
    const db = this.database;
    const holds = session !== null && holdsSession(context.settings, session, reason);
    if (holds) db.prepare(SQL.releaseFollowers).run(context.id, session, sequence);
    db.prepare(SQL.kill).run(reason, description ?? null, now, holds ? 1 : null, sequence);
    if (session !== null) this.advanceSession(context, session, now);
  }

  /**
   * A locked message goes back (abandoned, or its lock expired): dead-lettered past its last delivery, else
   * deliverable from `availableAt`. In a session the messages locked behind it go back to waiting, and so does it
   * while an earlier message of its session is still held: only a session's first message is ever deliverable.
   */
  unlock(context: QueueContext, row: LockedRow, availableAt: number, now: number): void {
    const db = this.database;
    const { sequence, session } = row;
    if (session !== null) db.prepare(SQL.releaseFollowers).run(context.id, session, sequence);
    if (row.delivery_count >= context.settings.maxDeliveryCount) {
      this.kill(context, sequence, session, DEAD_LETTER_MAX_DELIVERIES, undefined, now);
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
   * A message of the session left (completed or dead), or a dead letter stopped holding it: once none of its
   * messages is held and no dead letter holds it, the next waiting one becomes its head.
   */
  advanceSession(context: QueueContext, session: string, now: number): void {
    if (this.sessionBusy(context, session)) return;
    const next = this.database
      .prepare(SQL.nextWaiting)
      .get<{ sequence: number; available_at: number; priority: number }>(context.id, session);
    if (next === undefined) return;
    this.#makeDeliverable(context, next.sequence, next.priority, Math.max(next.available_at, now), now);
  }

  /** Due scheduled messages become available; expired locks come back or, past the last delivery, die. */
  releaseDue(context: QueueContext, now: number): void {
    const db = this.database;
    const due = db.prepare(SQL.nextDue).get<DueRow>(context.id, context.id) as DueRow;
    const step = priorityStep(context.settings.priority);
    if (due.scheduled !== null && due.scheduled <= now) {
      for (const { session } of db
        .prepare(SQL.killExpiredScheduled)
        .all<{ session: string | null }>(DEAD_LETTER_EXPIRED, now, context.id, now, now)) {
        if (session !== null) this.advanceSession(context, session, now);
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
        this.unlock(context, row, row.due_at, now);
      }
    }
  }

  nextDue(context: QueueContext): number | undefined {
    return earliest(this.database.prepare(SQL.nextDue).get<DueRow>(context.id, context.id) as DueRow);
  }
}

export interface Placement {
  state: MessageState;
  availableAt: number;
  rank: number | null;
  dueAt: number | null;
}

/** Behind its session's head: keeps the time it asked to be available from, for when its turn comes. */
export function waitingPlacement(availableAt: number): Placement {
  return { state: 'waiting', availableAt, rank: null, dueAt: null };
}

function priorityStep(policy: PriorityPolicy): number {
  return policy.policy === 'strict' ? STRICT_PRIORITY_STEP : policy.agingMs;
}
