import {
  DEAD_LETTER_EXPIRED,
  type DeadLetter,
  type DeadLetterQuery,
  type DeliveredMessage,
  type MessageBackend,
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
  type StoredMessage,
  type Subscription,
  type TopicSettings,
} from '../backend.js';
import { UnknownQueueError } from '../errors.js';
import { QueueState } from './queue-state.js';
import { delivered, stored } from './records.js';
import { MemoryTopics } from './topics.js';
import { Watchers } from './watchers.js';

/**
 * The reference implementation of the port: everything in this process's memory, nothing durable. Use it for
 * tests and for single-process applications that can lose their queue on exit.
 */
export class MemoryMessageBackend implements MessageBackend {
  readonly kind = 'memory';
  readonly sessionBatches = true;
  readonly #queues = new Map<string, QueueState>();
  readonly #watchers = new Watchers();
  readonly #topics = new MemoryTopics(this.#watchers);

  async putQueue(name: string, settings: QueueSettings): Promise<void> {
    const existing = this.#queues.get(name);
    if (existing) existing.settings = settings;
    else this.#queues.set(name, new QueueState(name, settings, this.#watchers));
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    return this.#queues.get(name)?.settings;
  }

  async listQueues(): Promise<string[]> {
    return [...this.#queues.keys()].sort();
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.#topics.unsubscribe(name);
    return this.#queues.delete(name);
  }

  async send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]> {
    const state = this.#queue(queue);
    const outcomes = messages.map((message) => state.store(message, now));
    this.#watchers.notify(queue);
    return outcomes;
  }

  async receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult> {
    const state = this.#queue(queue);
    const { now } = request;
    state.releaseDue(now);
    const messages: DeliveredMessage[] = [];
    for (let heads = 0; heads < request.max; ) {
      const entry = state.available.pop();
      if (entry === undefined) break;
      const record = entry.record;
      if (record.version !== entry.version || record.state !== 'available') continue;
      if (record.expiresAt !== undefined && record.expiresAt <= now) {
        state.kill(record, DEAD_LETTER_EXPIRED, undefined, now);
        continue;
      }
      state.lock(record, now + request.lockMs);
      messages.push(delivered(record));
      heads++;
      const session = record.sessionId === undefined ? undefined : state.sessions.get(record.sessionId);
      for (let taken = 1; session !== undefined && taken < (request.sessionBatch ?? 1); taken++) {
        const follower = session.waiting[0];
        if (follower === undefined || follower.availableAt > now) break;
        if (follower.expiresAt !== undefined && follower.expiresAt <= now) break;
        session.waiting.shift();
        session.held.push(follower);
        state.lock(follower, now + request.lockMs);
        messages.push(delivered(follower));
      }
    }
    return { messages, nextDueAt: messages.length > 0 ? undefined : state.nextDue() };
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
      state.pushTimed(record, record.lockedUntil);
      return record.lockedUntil;
    });
  }

  async complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]> {
    const state = this.#queue(queue);
    return lockTokens.map((token) => {
      const record = state.unlock(token);
      if (record === undefined) return 'lost';
      state.live.delete(record.sequence);
      record.version++;
      state.advanceSession(record, now);
      return 'ok';
    });
  }

  async abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome> {
    const state = this.#queue(queue);
    const record = state.unlock(lockToken);
    if (record === undefined) return 'lost';
    state.release(record, now + delayMs, now);
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
    const record = state.unlock(lockToken);
    if (record === undefined) return 'lost';
    state.kill(record, reason, description, now);
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
      .map((record) =>
        Object.assign(stored(record), {
          deadLetterReason: record.deadLetterReason as string,
          deadLetterDescription: record.deadLetterDescription,
          deadLetteredAt: record.deadLetteredAt as number,
          holdsSession: state.holdsSession(record),
        }),
      );
  }

  async resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number> {
    const state = this.#queue(queue);
    let resent = 0;
    for (const sequence of [...sequences].sort((a, b) => a - b)) {
      const record = state.takeDead(sequence);
      if (record === undefined) continue;
      delete record.deadLetterReason;
      delete record.deadLetterDescription;
      delete record.deadLetteredAt;
      record.deliveryCount = 0;
      state.enter(record, now, now);
      resent++;
    }
    if (resent > 0) this.#watchers.notify(queue);
    return resent;
  }

  async purgeDeadLetters(
    queue: string,
    sequences: readonly number[] | undefined,
    now: number,
  ): Promise<number> {
    const state = this.#queue(queue);
    const released = new Set<string>();
    let purged = 0;
    for (const sequence of sequences ?? [...state.dead.keys()]) {
      const record = state.takeDead(sequence);
      if (record === undefined) continue;
      purged++;
      if (record.sessionId !== undefined) released.add(record.sessionId);
    }
    for (const sessionId of released) state.resumeSession(sessionId, now);
    return purged;
  }

  async getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined> {
    return this.#queue(queue).sessions.get(sessionId)?.state;
  }

  async setSessionState(queue: string, sessionId: string, value: Uint8Array | undefined): Promise<void> {
    const state = this.#queue(queue);
    const session = state.session(sessionId);
    session.state = value === undefined ? undefined : new Uint8Array(value);
    state.dropIdleSession(sessionId, session);
  }

  async putTopic(name: string, settings: TopicSettings): Promise<void> {
    this.#topics.put(name, settings);
  }

  async getTopic(name: string): Promise<TopicSettings | undefined> {
    return this.#topics.get(name);
  }

  async listTopics(): Promise<string[]> {
    return this.#topics.list();
  }

  async deleteTopic(name: string): Promise<boolean> {
    return this.#topics.delete(name);
  }

  async subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    this.#topics.subscribe(subscription, this.#queue(subscription.queue), replay, now);
  }

  async unsubscribe(queue: string): Promise<boolean> {
    return this.#topics.unsubscribe(queue);
  }

  async listSubscriptions(): Promise<Subscription[]> {
    return this.#topics.listSubscriptions();
  }

  async publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    return this.#topics.publish(topic, messages, now, this.#queues);
  }

  watch(queue: string, listener: () => void): () => void {
    return this.#watchers.watch(queue, listener);
  }

  async close(): Promise<void> {
    this.#watchers.clear();
  }

  #queue(name: string): QueueState {
    const state = this.#queues.get(name);
    if (state === undefined) throw new UnknownQueueError(name);
    return state;
  }
}
