// The SQLite backend's topics: their settings, subscriptions, retained messages, and publishing to them.
import type {
  MessageFilter,
  OutgoingMessage,
  PublishOutcome,
  ReplayFrom,
  Subscription,
  TopicSettings,
} from '../backend.js';
import { UnknownTopicError } from '../errors.js';
import { subscriptionMatches } from '../routing.js';
import { EAGER } from './options.js';
import type { QueueContext, QueueRows } from './queue-rows.js';
import { retainedMessage } from './rows.js';
import { type RetainedRow, SQL, type SubscriptionRow } from './statements.js';

/** Topic operations on a database the backend has checked is open and migrated. */
export class SqliteTopics {
  readonly #rows: QueueRows;
  #subscriptions = new Map<string, Subscription>();

  constructor(rows: QueueRows) {
    this.#rows = rows;
  }

  put(name: string, settings: TopicSettings): void {
    this.#rows.database.prepare(SQL.putTopic).run(name, settings.retentionMs);
  }

  get(name: string): TopicSettings | undefined {
    const row = this.#rows.database.prepare(SQL.topic).get<{ retention_ms: number }>(name);
    return row === undefined ? undefined : { retentionMs: row.retention_ms };
  }

  list(): string[] {
    return this.#rows.database
      .prepare(SQL.listTopics)
      .all<{ name: string }>()
      .map((row) => row.name)
      .sort();
  }

  delete(name: string): Promise<boolean> {
    const db = this.#rows.database;
    return db.transactionAsync(() => {
      db.prepare(SQL.deleteRetained).run(name);
      return db.prepare(SQL.deleteTopic).run(name).changes > 0;
    });
  }

  subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void> {
    const rows = this.#rows;
    const db = rows.database;
    return db.transactionAsync(() => {
      const context = rows.load(subscription.queue);
      db.prepare(SQL.subscribe).run(
        subscription.queue,
        JSON.stringify(subscription.topics),
        subscription.filter === undefined ? null : JSON.stringify(subscription.filter),
      );
      if (replay === 'none') return;
      const since = replay === 'retained' ? Number.MIN_SAFE_INTEGER : replay.since;
      for (const row of db.prepare(SQL.replay).all<RetainedRow>(since, now)) {
        const message = retainedMessage(row);
        if (subscriptionMatches(subscription, row.topic, message)) rows.store(context, message, now);
      }
      rows.finish(context);
    });
  }

  unsubscribe(queue: string): boolean {
    return this.#rows.database.prepare(SQL.unsubscribe).run(queue).changes > 0;
  }

  listSubscriptions(): Subscription[] {
    // Copies: the parsed ones are kept for publish.
    return this.#load()
      .map((subscription) => structuredClone(subscription))
      .sort((a, b) => (a.queue < b.queue ? -1 : 1));
  }

  publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]> {
    const rows = this.#rows;
    const db = rows.database;
    return db.transactionAsync(() => {
      const settings = db.prepare(SQL.topic).get<{ retention_ms: number }>(topic);
      if (settings === undefined) throw new UnknownTopicError(topic);
      const subscriptions = this.#load();
      const contexts = new Map<string, QueueContext>();
      const outcomes = messages.map((message) => {
        const deliveredTo: string[] = [];
        for (const subscription of subscriptions) {
          if (!subscriptionMatches(subscription, topic, message)) continue;
          let context = contexts.get(subscription.queue);
          if (context === undefined) {
            context = rows.load(subscription.queue);
            contexts.set(subscription.queue, context);
          }
          if (rows.store(context, message, now).accepted) deliveredTo.push(subscription.queue);
        }
        if (settings.retention_ms > 0) this.#retain(topic, message, now);
        return { id: message.id, deliveredTo };
      });
      db.prepare(SQL.pruneRetained).run(topic, now - settings.retention_ms);
      rows.sweepIds(now);
      for (const context of contexts.values()) rows.finish(context);
      return outcomes;
    }, EAGER);
  }

  /** Every subscription, parsed once per change (publish reads them all each time). */
  #load(): Subscription[] {
    const previous = this.#subscriptions;
    this.#subscriptions = new Map();
    return this.#rows.database
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
    this.#rows.database
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
