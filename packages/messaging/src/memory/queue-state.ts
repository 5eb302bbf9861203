// One memory queue: its messages and the transitions between available, scheduled, locked, waiting and dead.
import { randomId } from '@stratus/core';
import {
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
  holdsSession,
  type OutgoingMessage,
  type QueueSettings,
  rankOf,
  type SendOutcome,
} from '../backend.js';
import { MinHeap } from './min-heap.js';
import { insertBySequence, type MessageRecord } from './records.js';
import type { Watchers } from './watchers.js';

interface HeapEntry {
  readonly key: number;
  readonly sequence: number;
  readonly record: MessageRecord;
  readonly version: number;
}

const entryLess = (a: HeapEntry, b: HeapEntry) =>
  a.key < b.key || (a.key === b.key && a.sequence < b.sequence);

export interface SessionRecord {
  /**
   * The session's messages that are available, scheduled or locked, by sequence: its head, then those a receive
   * locked with it (ReceiveRequest.sessionBatch).
   */
  held: MessageRecord[];
  /** Messages behind the head, by sequence. */
  waiting: MessageRecord[];
  /** Sequences of the dead letters that hold the session: while there is one, no waiting message goes on. */
  holding: Set<number>;
  state: Uint8Array | undefined;
}

export class QueueState {
  readonly name: string;
  settings: QueueSettings;
  nextSequence = 1;
  /** Every message not completed and not dead, by sequence (Map keeps insertion order). */
  readonly live = new Map<number, MessageRecord>();
  readonly dead = new Map<number, MessageRecord>();
  readonly available = new MinHeap<HeapEntry>(entryLess);
  /** Scheduled messages by availableAt and locked ones by lockedUntil. */
  readonly timed = new MinHeap<HeapEntry>(entryLess);
  readonly byToken = new Map<string, MessageRecord>();
  readonly seenIds = new Map<string, number>();
  readonly seenOrder: { id: string; until: number }[] = [];
  readonly sessions = new Map<string, SessionRecord>();
  readonly #watchers: Watchers;

  constructor(name: string, settings: QueueSettings, watchers: Watchers) {
    this.name = name;
    this.settings = settings;
    this.#watchers = watchers;
  }

  store(message: OutgoingMessage, now: number): SendOutcome {
    const { settings } = this;
    if (settings.duplicateWindowMs > 0) {
      this.#forgetSeenIds(now);
      const until = this.seenIds.get(message.id);
      if (until !== undefined && until > now) return { id: message.id, accepted: false, sequence: undefined };
      const seenUntil = now + settings.duplicateWindowMs;
      this.seenIds.set(message.id, seenUntil);
      this.seenOrder.push({ id: message.id, until: seenUntil });
    }
    const defaultExpiry = settings.defaultTtlMs === undefined ? undefined : now + settings.defaultTtlMs;
    const record: MessageRecord = {
      sequence: this.nextSequence++,
      // Copied so neither the sender nor a handler can change what a later delivery sees.
      message: { ...message, body: message.body.slice(), headers: message.headers && { ...message.headers } },
      priority: message.priority ?? 0,
      enqueuedAt: now,
      expiresAt: message.expiresAt ?? defaultExpiry,
      sessionId: settings.sessions ? message.sessionId : undefined,
      state: 'available',
      availableAt: now,
      rank: 0,
      deliveryCount: 0,
      lockToken: undefined,
      lockedUntil: 0,
      version: 0,
    };
    this.enter(record, message.availableAt ?? now, now);
    return { id: message.id, accepted: true, sequence: record.sequence };
  }

  /**
   * A message (new or resent) joins the live set: deliverable, or in its session's waiting messages by sequence
   * (a resent one may come before some), whose first goes on when nothing holds the session.
   */
  enter(record: MessageRecord, availableAt: number, now: number): void {
    this.live.set(record.sequence, record);
    if (record.sessionId !== undefined) {
      const session = this.session(record.sessionId);
      if (session.held.length > 0 || session.holding.size > 0 || session.waiting.length > 0) {
        record.state = 'waiting';
        record.availableAt = availableAt;
        record.version++;
        insertBySequence(session.waiting, record);
        this.#resume(record.sessionId, session, now);
        return;
      }
      session.held.push(record);
    }
    this.#makeDeliverable(record, availableAt, now);
  }

  lock(record: MessageRecord, lockedUntil: number): void {
    record.state = 'locked';
    record.deliveryCount++;
    record.lockToken = randomId();
    record.lockedUntil = lockedUntil;
    record.version++;
    this.byToken.set(record.lockToken, record);
    this.pushTimed(record, lockedUntil);
  }

  pushTimed(record: MessageRecord, dueAt: number): void {
    this.timed.push({ key: dueAt, sequence: record.sequence, record, version: record.version });
  }

  /** The record locked under `token`, unlocked; undefined when that delivery no longer holds the message. */
  unlock(token: string): MessageRecord | undefined {
    const record = this.byToken.get(token);
    if (record === undefined) return undefined;
    this.byToken.delete(token);
    return record;
  }

  /**
   * A locked message goes back (abandoned, or its lock expired): dead-lettered past its last delivery, else
   * deliverable from `availableAt`. In a session the messages locked behind it go back to waiting, and so does it
   * while an earlier message of its session is still held: only a session's first message is ever deliverable.
   */
  release(record: MessageRecord, availableAt: number, now: number): void {
    const session = record.sessionId === undefined ? undefined : this.sessions.get(record.sessionId);
    const at = session === undefined ? -1 : this.#releaseBehind(session, record);
    if (record.deliveryCount >= this.settings.maxDeliveryCount) {
      this.kill(record, DEAD_LETTER_MAX_DELIVERIES, undefined, now);
    } else if (session !== undefined && at > 0) {
      session.held.splice(at, 1);
      record.state = 'waiting';
      record.availableAt = availableAt;
      record.lockToken = undefined;
      record.version++;
      session.waiting.unshift(record);
    } else {
      this.#makeDeliverable(record, availableAt, now);
      this.#watchers.notify(this.name);
    }
  }

  /** Due scheduled messages become available; expired locks come back (in order) or, past the last delivery, die. */
  releaseDue(now: number): void {
    const expired: MessageRecord[] = [];
    for (;;) {
      const entry = this.timed.peek();
      if (entry === undefined || entry.key > now) break;
      this.timed.pop();
      const record = entry.record;
      if (record.version !== entry.version) continue;
      if (record.state === 'scheduled') {
        if (record.expiresAt !== undefined && record.expiresAt <= now) {
          this.kill(record, DEAD_LETTER_EXPIRED, undefined, now);
        } else {
          this.#makeDeliverable(record, record.availableAt, now);
        }
      } else if (record.state === 'locked') {
        expired.push(record);
      }
    }
    // By sequence, as the SQLite backend does: a session's head before the messages locked with it.
    expired.sort((a, b) => a.sequence - b.sequence);
    for (const record of expired) {
      // An earlier message of its session may have sent it back to waiting already.
      if (record.state !== 'locked') continue;
      this.byToken.delete(record.lockToken as string);
      this.release(record, record.lockedUntil, now);
    }
  }

  nextDue(): number | undefined {
    for (;;) {
      const entry = this.timed.peek();
      if (entry === undefined) return undefined;
      if (entry.record.version === entry.version) return entry.key;
      this.timed.pop();
    }
  }

  /** In a session, the messages locked behind `record` go back to waiting (their locks lost); returns its index. */
  #releaseBehind(session: SessionRecord, record: MessageRecord): number {
    const at = session.held.indexOf(record);
    if (at < 0) return at;
    const behind = session.held.splice(at + 1);
    for (const follower of behind) {
      this.byToken.delete(follower.lockToken as string);
      follower.state = 'waiting';
      follower.lockToken = undefined;
      follower.version++;
    }
    session.waiting.unshift(...behind);
    return at;
  }

  /** Dead-letters a message; one that holds its session (holdsSession) sends the messages locked behind it back. */
  kill(record: MessageRecord, reason: string, description: string | undefined, now: number): void {
    const session = record.sessionId === undefined ? undefined : this.sessions.get(record.sessionId);
    if (session !== undefined && holdsSession(this.settings, record.sessionId, reason)) {
      this.#releaseBehind(session, record);
      session.holding.add(record.sequence);
    }
    this.live.delete(record.sequence);
    record.state = 'dead';
    record.lockToken = undefined;
    record.version++;
    record.deadLetterReason = reason;
    record.deadLetterDescription = description;
    record.deadLetteredAt = now;
    this.dead.set(record.sequence, record);
    this.advanceSession(record, now);
  }

  /** A message of the session left (completed or dead): the session may go on (see #resume). */
  advanceSession(record: MessageRecord, now: number): void {
    if (record.sessionId === undefined) return;
    const session = this.sessions.get(record.sessionId);
    const at = session?.held.indexOf(record) ?? -1;
    if (session === undefined || at < 0) return;
    session.held.splice(at, 1);
    this.#resume(record.sessionId, session, now);
  }

  /** Takes a dead letter out of the dead-letter queue (to resend or purge it): it no longer holds its session. */
  takeDead(sequence: number): MessageRecord | undefined {
    const record = this.dead.get(sequence);
    if (record === undefined) return undefined;
    this.dead.delete(sequence);
    if (record.sessionId !== undefined) this.sessions.get(record.sessionId)?.holding.delete(sequence);
    return record;
  }

  /** After dead letters were purged: their sessions go on, unless something else holds them. */
  resumeSession(sessionId: string, now: number): void {
    const session = this.sessions.get(sessionId);
    if (session !== undefined) this.#resume(sessionId, session, now);
  }

  /** Once none of its messages is held and no dead letter holds it, the session's next waiting one is its head. */
  #resume(sessionId: string, session: SessionRecord, now: number): void {
    if (session.held.length > 0 || session.holding.size > 0) return;
    const next = session.waiting.shift();
    if (next !== undefined) {
      session.held.push(next);
      this.#makeDeliverable(next, Math.max(next.availableAt, now), now);
      this.#watchers.notify(this.name);
    } else {
      this.dropIdleSession(sessionId, session);
    }
  }

  session(sessionId: string): SessionRecord {
    let session = this.sessions.get(sessionId);
    if (session === undefined) {
      session = { held: [], waiting: [], holding: new Set(), state: undefined };
      this.sessions.set(sessionId, session);
    }
    return session;
  }

  dropIdleSession(sessionId: string, session: SessionRecord): void {
    if (
      session.held.length === 0 &&
      session.waiting.length === 0 &&
      session.holding.size === 0 &&
      session.state === undefined
    ) {
      this.sessions.delete(sessionId);
    }
  }

  /** Whether a dead letter holds its session. */
  holdsSession(record: MessageRecord): boolean {
    return (
      record.sessionId !== undefined &&
      this.sessions.get(record.sessionId)?.holding.has(record.sequence) === true
    );
  }

  #makeDeliverable(record: MessageRecord, availableAt: number, now: number): void {
    record.availableAt = availableAt;
    record.lockToken = undefined;
    record.version++;
    if (availableAt > now) {
      record.state = 'scheduled';
      this.pushTimed(record, availableAt);
    } else {
      record.state = 'available';
      record.rank = rankOf(availableAt, record.priority, this.settings.priority);
      this.available.push({ key: record.rank, sequence: record.sequence, record, version: record.version });
    }
  }

  #forgetSeenIds(now: number): void {
    const order = this.seenOrder;
    let drop = 0;
    while (drop < order.length && (order[drop] as { until: number }).until <= now) {
      const { id, until } = order[drop] as { id: string; until: number };
      if (this.seenIds.get(id) === until) this.seenIds.delete(id);
      drop++;
    }
    if (drop > 0) order.splice(0, drop);
  }
}
