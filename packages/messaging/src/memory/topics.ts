// The memory backend's topics: their settings, retained messages and subscriptions, and publishing to them.
import type { OutgoingMessage, PublishOutcome, ReplayFrom, Subscription, TopicSettings } from '../backend.js';
import { UnknownTopicError } from '../errors.js';
import { subscriptionMatches } from '../routing.js';
import type { QueueState } from './queue-state.js';
import type { Watchers } from './watchers.js';

interface RetainedMessage {
  readonly topic: string;
  readonly at: number;
  readonly message: OutgoingMessage;
}

export class MemoryTopics {
  readonly #topics = new Map<string, TopicSettings>();
  readonly #retained: RetainedMessage[] = [];
  readonly #subscriptions = new Map<string, Subscription>();
  readonly #watchers: Watchers;

  constructor(watchers: Watchers) {
    this.#watchers = watchers;
  }

  put(name: string, settings: TopicSettings): void {
    this.#topics.set(name, settings);
  }

  get(name: string): TopicSettings | undefined {
    return this.#topics.get(name);
  }

  list(): string[] {
    return [...this.#topics.keys()].sort();
  }

  delete(name: string): boolean {
    const existed = this.#topics.delete(name);
    if (existed) this.#retain(Number.POSITIVE_INFINITY);
    return existed;
  }

  subscribe(subscription: Subscription, state: QueueState, replay: ReplayFrom, now: number): void {
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
        state.store(retained.message, now);
      }
    }
    this.#watchers.notify(subscription.queue);
  }

  unsubscribe(queue: string): boolean {
    return this.#subscriptions.delete(queue);
  }

  listSubscriptions(): Subscription[] {
    return [...this.#subscriptions.values()].sort((a, b) => (a.queue < b.queue ? -1 : 1));
  }

  publish(
    topic: string,
    messages: readonly OutgoingMessage[],
    now: number,
    queues: ReadonlyMap<string, QueueState>,
  ): PublishOutcome[] {
    const settings = this.#topics.get(topic);
    if (settings === undefined) throw new UnknownTopicError(topic);
    const touched = new Set<string>();
    const outcomes = messages.map((message) => {
      const deliveredTo: string[] = [];
      for (const subscription of this.#subscriptions.values()) {
        if (!subscriptionMatches(subscription, topic, message)) continue;
        const state = queues.get(subscription.queue);
        if (state === undefined) continue;
        if (state.store(message, now).accepted) deliveredTo.push(subscription.queue);
        touched.add(subscription.queue);
      }
      if (settings.retentionMs > 0) this.#retained.push({ topic, at: now, message });
      return { id: message.id, deliveredTo };
    });
    this.#retain(now);
    for (const queue of touched) this.#watchers.notify(queue);
    return outcomes;
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
}
