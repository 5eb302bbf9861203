import { randomId } from '@stratus/core';
import {
  DEAD_LETTER_EXPIRED,
  DEAD_LETTER_MAX_DELIVERIES,
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
  rankOf,
  type SendOutcome,
  type SettleOutcome,
  type StoredMessage,
  type Subscription,
  type TopicSettings,
} from '../backend.js';
import { UnknownQueueError, UnknownTopicError } from '../errors.js';
import { subscriptionMatches } from '../routing.js';
import { MinHeap } from './min-heap.js';

/** A stored message; mutated in place as it moves between states. `version` invalidates stale heap entries. */
interface Record {
  readonly sequence: number;
  readonly message: OutgoingMessage;
  readonly priority: number;
  readonly enqueuedAt: number;
  readonly expiresAt: number | undefined;
  readonly sessionId: string | undefined;
  state: MessageState;
  availableAt: number;
  rank: number;
  deliveryCount: number;
  lockToken: string | undefined;
  lockedUntil: number;
  version: number;
  deadLetterReason?: string;
  deadLetterDescription?: string | undefined;
  deadLetteredAt?: number;
}

interface HeapEntry {
  readonly key: number;
  readonly sequence: number;
  readonly record: Record;
  readonly version: number;
}

const entryLess = (a: HeapEntry, b: HeapEntry) =>
  a.key < b.key || (a.key === b.key && a.sequence < b.sequence);

interface SessionRecord {
  /**
   * The session's messages that are available, scheduled or locked, by sequence: its head, then those a receive
   * locked with it (ReceiveRequest.sessionBatch).
   */
  held: Record[];
  /** Messages behind the head, by sequence. */
  waiting: Record[];
  state: Uint8Array | undefined;
}

class QueueState {
  readonly name: string;
  settings: QueueSettings;
  nextSequence = 1;
  /** Every message not completed and not dead, by sequence (Map keeps insertion order). */
  readonly live = new Map<number, Record>();
  readonly dead = new Map<number, Record>();
  readonly available = new MinHeap<HeapEntry>(entryLess);
  /** Scheduled messages by availableAt and locked ones by lockedUntil. */
  readonly timed = new MinHeap<HeapEntry>(entryLess);
  readonly byToken = new Map<string, Record>();
  readonly seenIds = new Map<string, number>();
  readonly seenOrder: { id: string; until: number }[] = [];
  readonly sessions = new Map<string, SessionRecord>();

  constructor(name: string, settings: QueueSettings) {
    this.name = name;
    this.settings = settings;
  }
}

interface RetainedMessage {
  readonly topic: string;
  readonly at: number;
  readonly message: OutgoingMessage;
}

/**
 * The reference implementation of the port: everything in this process's memory, nothing durable. Use it for
 * tests and for single-process applications that can lose their queue on exit.
 */
export class MemoryMessageBackend implements MessageBackend {
  readonly kind = 'memory';
  readonly sessionBatches = true;
  readonly #queues = new Map<string, QueueState>();
  readonly #topics = new Map<string, TopicSettings>();
  readonly #retained: RetainedMessage[] = [];
  readonly #subscriptions = new Map<string, Subscription>();
  readonly #watchers = new Map<string, Set<() => void>>();

  async putQueue(name: string, settings: QueueSettings): Promise<void> {
    const existing = this.#queues.get(name);
    if (existing) existing.settings = settings;
    else this.#queues.set(name, new QueueState(name, settings));
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    return this.#queues.get(name)?.settings;
  }

  async listQueues(): Promise<string[]> {
    return [...this.#queues.keys()].sort();
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.#subscriptions.delete(name);
    return this.#queues.delete(name);
  }

  async send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    const state = this.#queue(queue);
    const outcomes = messages.map((message) => this.#store(state, message, now));
    this.#notify(queue);
    return outcomes;
  }

  async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    const state = this.#queue(queue);
    const { now } = request;
    this.#releaseDue(state, now);
    const messages: DeliveredMessage[] = [];
    for (let heads = 0; heads < request.max; ) {
      const entry = state.available.pop();
      if (entry === undefined) break;
      const record = entry.record;
      if (record.version !== entry.version || record.state !== 'available') continue;
      if (record.expiresAt !== undefined && record.expiresAt <= now) {
        this.#kill(state, record, DEAD_LETTER_EXPIRED, undefined, now);
        continue;
      }
      this.#lock(state, record, now + request.lockMs);
      messages.push(delivered(record));
      heads++;
      const session = record.sessionId === undefined ? undefined : state.sessions.get(record.sessionId);
      for (let taken = 1; session !== undefined && taken < (request.sessionBatch ?? 1); taken++) {
        const follower = session.waiting[0];
        if (follower === undefined || follower.availableAt > now) break;
        if (follower.expiresAt !== undefined && follower.expiresAt <= now) break;
        session.waiting.shift();
        session.held.push(follower);
        this.#lock(state, follower, now + request.lockMs);
        messages.push(delivered(follower));
      }
    }
    return { messages, nextDueAt: messages.length > 0 ? undefined : this.#nextDue(state) };
  }

  #lock(state: QueueState, record: Record, lockedUntil: number): void {
    record.state = 'locked';
    record.deliveryCount++;
    record.lockToken = randomId();
    record.lockedUntil = lockedUntil;
    record.version++;
    state.byToken.set(record.lockToken, record);
    this.#pushTimed(state, record, lockedUntil);
  }

  async renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]> {
    const state = this.#queue(queue);
    return lockTokens.map((token) => {
      const record = state.byToken.get(token);
      if (record === undefined) return undefined;
      record.lockedUntil = now + lockMs;
      record.version++;
      this.#pushTimed(state, record, record.lockedUntil);
      return record.lockedUntil;
    });
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    const state = this.#queue(queue);
    return lockTokens.map((token) => {
      const record = this.#unlock(state, token);
      if (record === undefined) return 'lost';
      state.live.delete(record.sequence);
      record.version++;
      this.#advanceSession(state, record, now);
      return 'ok';
    });
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    const state = this.#queue(queue);
    const record = this.#unlock(state, lockToken);
    if (record === undefined) return 'lost';
    this.#release(state, record, now + delayMs, now);
    return 'ok';
  }

  async deadLetter(
    queue: string,
    lockToken: string,
    reason: string,
    description: string | undefined,
    now: number,
  ): Promise<SettleOutcome> {
    const state = this.#queue(queue);
    const record = this.#unlock(state, lockToken);
    if (record === undefined) return 'lost';
    this.#kill(state, record, reason, description, now);
    return 'ok';
  }

  async peek(queue: string, query: PeekQuery): Promise<StoredMessage[]> {
    const state = this.#queue(queue);
    const after = query.afterSequence ?? 0;
    return [...state.live.values()]
      .filter((record) => record.sequence > after)
      .sort((a, b) => a.sequence - b.sequence)
      .slice(0, query.limit)
      .map(stored);
  }

  async stats(queue: string, now: number): Promise<QueueStats> {
    const state = this.#queue(queue);
    const counts = { available: 0, scheduled: 0, locked: 0, waiting: 0 };
    let oldest = Number.POSITIVE_INFINITY;
    for (const record of state.live.values()) {
      counts[record.state as keyof typeof counts]++;
      if (record.enqueuedAt < oldest) oldest = record.enqueuedAt;
    }
    return {
      ...counts,
      deadLettered: state.dead.size,
      length: state.live.size,
      oldestAgeMs: state.live.size === 0 ? 0 : Math.max(0, now - oldest),
    };
  }

  async listDeadLetters(queue: string, query: DeadLetterQuery): Promise<DeadLetter[]> {
    const state = this.#queue(queue);
    const after = query.afterSequence ?? 0;
    return [...state.dead.values()]
      .filter((record) => record.sequence > after)
      .sort((a, b) => a.sequence - b.sequence)
      .slice(0, query.limit)
      .map((record) => ({
        ...stored(record),
        deadLetterReason: record.deadLetterReason as string,
        deadLetterDescription: record.deadLetterDescription,
        deadLetteredAt: record.deadLetteredAt as number,
      }));
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    const state = this.#queue(queue);
    let resent = 0;
    for (const sequence of [...sequences].sort((a, b) => a - b)) {
      const record = state.dead.get(sequence);
      if (record === undefined) continue;
      state.dead.delete(sequence);
      delete record.deadLetterReason;
      delete record.deadLetterDescription;
      delete record.deadLetteredAt;
      record.deliveryCount = 0;
      this.#enter(state, record, now, now);
      resent++;
    }
    if (resent > 0) this.#notify(queue);
    return resent;
  }

  async purgeDeadLetters(queue: string, sequences: readonly number[] | undefined): Promise<number> {
    const state = this.#queue(queue);
    if (sequences === undefined) {
      const count = state.dead.size;
      state.dead.clear();
      return count;
    }
    let purged = 0;
    for (const sequence of sequences) if (state.dead.delete(sequence)) purged++;
    return purged;
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    return this.#queue(queue).sessions.get(sessionId)?.state;
  }

  async setSessionState(queue: string, sessionId: string, value: Uint8Array | undefined): Promise<void> {
    const state = this.#queue(queue);
    const session = this.#session(state, sessionId);
    session.state = value === undefined ? undefined : new Uint8Array(value);
    this.#dropIdleSession(state, sessionId, session);
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    this.#topics.set(name, settings);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    return this.#topics.get(name);
  }

  async listTopics(): Promise<string[]> {
    return [...this.#topics.keys()].sort();
  }

  async deleteTopic(name: string): Promise<boolean> {
    const existed = this.#topics.delete(name);
    if (existed) this.#retain(Number.POSITIVE_INFINITY);
    return existed;
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const state = this.#queue(subscription.queue);
    this.#subscriptions.set(subscription.queue, {
      queue: subscription.queue,
      topics: [...subscription.topics],
      filter: subscription.filter,
    });
    if (replay === 'none') return;
    this.#retain(now);
    const since = replay === 'retained' ? Number.NEGATIVE_INFINITY : replay.since;
    for (const retained of this.#retained) {
      if (retained.at >= since && subscriptionMatches(subscription, retained.topic, retained.message)) {
        this.#store(state, retained.message, now);
      }
    }
    this.#notify(subscription.queue);
  }

  async unsubscribe(queue: string): Promise<boolean> {
    return this.#subscriptions.delete(queue);
  }

  async listSubscriptions(): Promise<Subscription[]> {
    return [...this.#subscriptions.values()].sort((a, b) => (a.queue < b.queue ? -1 : 1));
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    const settings = this.#topics.get(topic);
    if (settings === undefined) throw new UnknownTopicError(topic);
    const touched = new Set<string>();
    const outcomes = messages.map((message) => {
      const deliveredTo: string[] = [];
      for (const subscription of this.#subscriptions.values()) {
        if (!subscriptionMatches(subscription, topic, message)) continue;
        const state = this.#queues.get(subscription.queue);
        if (state === undefined) continue;
        if (this.#store(state, message, now).accepted) deliveredTo.push(subscription.queue);
        touched.add(subscription.queue);
      }
      if (settings.retentionMs > 0) this.#retained.push({ topic, at: now, message });
      return { id: message.id, deliveredTo };
    });
    this.#retain(now);
    for (const queue of touched) this.#notify(queue);
    return outcomes;
  }

  watch(queue: string, listener: () => void): () => void {
    let listeners = this.#watchers.get(queue);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watchers.set(queue, listeners);
    }
    // Wrapped so the same function can watch twice and unwatch once.
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      listeners.delete(entry);
      if (listeners.size === 0 && this.#watchers.get(queue) === listeners) this.#watchers.delete(queue);
    };
  }

  async close(): Promise<void> {
    this.#watchers.clear();
  }

  #queue(name: string): QueueState {
    const state = this.#queues.get(name);
    if (state === undefined) throw new UnknownQueueError(name);
    return state;
  }

  #store(state: QueueState, message: OutgoingMessage, now: number): SendOutcome {
    const { settings } = state;
    if (settings.duplicateWindowMs > 0) {
      this.#forgetSeenIds(state, now);
      const until = state.seenIds.get(message.id);
      if (until !== undefined && until > now) return { id: message.id, accepted: false, sequence: undefined };
      const seenUntil = now + settings.duplicateWindowMs;
      state.seenIds.set(message.id, seenUntil);
      state.seenOrder.push({ id: message.id, until: seenUntil });
    }
    const defaultExpiry = settings.defaultTtlMs === undefined ? undefined : now + settings.defaultTtlMs;
    const record: Record = {
      sequence: state.nextSequence++,
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
    this.#enter(state, record, message.availableAt ?? now, now);
    return { id: message.id, accepted: true, sequence: record.sequence };
  }

  /** A message (new or resent) joins the live set: behind its session's head, or deliverable. */
  #enter(state: QueueState, record: Record, availableAt: number, now: number): void {
    state.live.set(record.sequence, record);
    if (record.sessionId !== undefined) {
      const session = this.#session(state, record.sessionId);
      if (session.held.length > 0) {
        record.state = 'waiting';
        record.availableAt = availableAt;
        record.version++;
        insertBySequence(session.waiting, record);
        return;
      }
      session.held.push(record);
    }
    this.#makeDeliverable(state, record, availableAt, now);
  }

  #makeDeliverable(state: QueueState, record: Record, availableAt: number, now: number): void {
    record.availableAt = availableAt;
    record.lockToken = undefined;
    record.version++;
    if (availableAt > now) {
      record.state = 'scheduled';
      this.#pushTimed(state, record, availableAt);
    } else {
      record.state = 'available';
      record.rank = rankOf(availableAt, record.priority, state.settings.priority);
      state.available.push({ key: record.rank, sequence: record.sequence, record, version: record.version });
    }
  }

  #pushTimed(state: QueueState, record: Record, dueAt: number): void {
    state.timed.push({ key: dueAt, sequence: record.sequence, record, version: record.version });
  }

  /**
   * A locked message goes back (abandoned, or its lock expired): dead-lettered past its last delivery, else
   * deliverable from `availableAt`. In a session the messages locked behind it go back to waiting, and so does it
   * while an earlier message of its session is still held: only a session's first message is ever deliverable.
   */
  #release(state: QueueState, record: Record, availableAt: number, now: number): void {
    const session = record.sessionId === undefined ? undefined : state.sessions.get(record.sessionId);
    const at = session?.held.indexOf(record) ?? -1;
    if (session !== undefined && at >= 0) {
      const behind = session.held.splice(at + 1);
      for (const follower of behind) {
        state.byToken.delete(follower.lockToken as string);
        follower.state = 'waiting';
        follower.lockToken = undefined;
        follower.version++;
      }
      session.waiting.unshift(...behind);
    }
    if (record.deliveryCount >= state.settings.maxDeliveryCount) {
      this.#kill(state, record, DEAD_LETTER_MAX_DELIVERIES, undefined, now);
    } else if (session !== undefined && at > 0) {
      session.held.splice(at, 1);
      record.state = 'waiting';
      record.availableAt = availableAt;
      record.lockToken = undefined;
      record.version++;
      session.waiting.unshift(record);
    } else {
      this.#makeDeliverable(state, record, availableAt, now);
      this.#notify(state.name);
    }
  }

  /** Due scheduled messages become available; expired locks come back (in order) or, past the last delivery, die. */
  #releaseDue(state: QueueState, now: number): void {
    const expired: Record[] = [];
    for (;;) {
      const entry = state.timed.peek();
      if (entry === undefined || entry.key > now) break;
      state.timed.pop();
      const record = entry.record;
      if (record.version !== entry.version) continue;
      if (record.state === 'scheduled') {
        if (record.expiresAt !== undefined && record.expiresAt <= now) {
          this.#kill(state, record, DEAD_LETTER_EXPIRED, undefined, now);
        } else {
          this.#makeDeliverable(state, record, record.availableAt, now);
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
      state.byToken.delete(record.lockToken as string);
      this.#release(state, record, record.lockedUntil, now);
    }
  }

  #nextDue(state: QueueState): number | undefined {
    for (;;) {
      const entry = state.timed.peek();
      if (entry === undefined) return undefined;
      if (entry.record.version === entry.version) return entry.key;
      state.timed.pop();
    }
  }

  /** The record locked under `token`, unlocked; undefined when that delivery no longer holds the message. */
  #unlock(state: QueueState, token: string): Record | undefined {
    const record = state.byToken.get(token);
    if (record === undefined) return undefined;
    state.byToken.delete(token);
    return record;
  }

  #kill(
    state: QueueState,
    record: Record,
    reason: string,
    description: string | undefined,
    now: number,
  ): void {
    state.live.delete(record.sequence);
    record.state = 'dead';
    record.lockToken = undefined;
    record.version++;
    record.deadLetterReason = reason;
    record.deadLetterDescription = description;
    record.deadLetteredAt = now;
    state.dead.set(record.sequence, record);
    this.#advanceSession(state, record, now);
  }

  /**
   * A message of the session left (completed or dead): once none of its messages is held, the next waiting one
   * becomes its head.
   */
  #advanceSession(state: QueueState, record: Record, now: number): void {
    if (record.sessionId === undefined) return;
    const session = state.sessions.get(record.sessionId);
    const at = session?.held.indexOf(record) ?? -1;
    if (session === undefined || at < 0) return;
    session.held.splice(at, 1);
    if (session.held.length > 0) return;
    const next = session.waiting.shift();
    if (next !== undefined) {
      session.held.push(next);
      this.#makeDeliverable(state, next, Math.max(next.availableAt, now), now);
      this.#notify(state.name);
    } else {
      this.#dropIdleSession(state, record.sessionId, session);
    }
  }

  #session(state: QueueState, sessionId: string): SessionRecord {
    let session = state.sessions.get(sessionId);
    if (session === undefined) {
      session = { held: [], waiting: [], state: undefined };
      state.sessions.set(sessionId, session);
    }
    return session;
  }

  #dropIdleSession(state: QueueState, sessionId: string, session: SessionRecord): void {
    if (session.held.length === 0 && session.waiting.length === 0 && session.state === undefined) {
      state.sessions.delete(sessionId);
    }
  }

  #forgetSeenIds(state: QueueState, now: number): void {
    const order = state.seenOrder;
    let drop = 0;
    while (drop < order.length && (order[drop] as { until: number }).until <= now) {
      const { id, until } = order[drop] as { id: string; until: number };
      if (state.seenIds.get(id) === until) state.seenIds.delete(id);
      drop++;
    }
    if (drop > 0) order.splice(0, drop);
  }

  /** Drops retained messages older than their topic's retention (all of a deleted topic's). */
  #retain(now: number): void {
    let write = 0;
    for (const retained of this.#retained) {
      const settings = this.#topics.get(retained.topic);
      if (settings !== undefined && retained.at + settings.retentionMs > now)
        this.#retained[write++] = retained;
    }
    this.#retained.length = write;
  }

  #notify(queue: string): void {
    const listeners = this.#watchers.get(queue);
    if (listeners === undefined) return;
    queueMicrotask(() => {
      for (const listener of listeners) listener();
    });
  }
}

function insertBySequence(list: Record[], record: Record): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as Record).sequence > record.sequence) i--;
  list.splice(i, 0, record);
}

function stored(record: Record): StoredMessage {
  const m = record.message;
  return {
    id: m.id,
    contentType: m.contentType,
    correlationId: m.correlationId,
    replyTo: m.replyTo,
    subject: m.subject,
    headers: m.headers,
    sessionId: m.sessionId,
    priority: record.priority,
    body: m.body.slice(),
    sequence: record.sequence,
    enqueuedAt: record.enqueuedAt,
    availableAt: record.availableAt,
    expiresAt: record.expiresAt,
    deliveryCount: record.deliveryCount,
    state: record.state,
  };
}

function delivered(record: Record): DeliveredMessage {
  return { ...stored(record), lockToken: record.lockToken as string, lockedUntil: record.lockedUntil };
}
