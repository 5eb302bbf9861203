import {
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  StratusError,
  systemClock,
} from '@stratus/core';
import { type RetryPolicy, retry } from '@stratus/resilience';
import type {
  MessageBackend,
  MessageFilter,
  QueueSettings,
  ReplayFrom,
  Subscription,
  TopicSettings,
} from './backend.js';
import { type Codec, defaultCodec } from './codec.js';
import { Consumer } from './consumer.js';
import type { ConsumerOptions } from './consumer-options.js';
import { UnknownQueueError } from './errors.js';
import type { ConsumerEvent } from './events.js';
import type { MessageHandler } from './message-handler.js';
import type { MessagingContext } from './messaging-context.js';
import {
  assertQueueName,
  assertTopicName,
  DEFAULT_QUEUE_SETTINGS,
  type QueueOptions,
  queueSettings,
} from './options.js';
import type { PayloadOffloader } from './outgoing.js';
import { QueueClient } from './queue-client.js';
import { TopicClient } from './topic-client.js';

export interface MessagingOptions {
  backend: MessageBackend;
  /** Time for scheduling, TTLs, locks and backoff; default the system clock. */
  clock?: Clock;
  codec?: Codec;
  /** Claim check: payloads above its threshold travel through a blob store. */
  claimCheck?: PayloadOffloader;
  /**
   * Retries sends and settles that fail for a transient reason (the backend is restarting, a connection dropped).
   * Default: for up to 30 s with exponential backoff. Typed Stratus errors are never retried. `false` disables it.
   */
  retry?: RetryPolicy | false;
  /** How long queue settings are cached by producers and consumers; default 5 s. */
  settingsCacheMs?: number;
  /** Size limit of messages published to topics (each subscribed queue may accept less); default 256 KiB. */
  maxTopicMessageBytes?: number;
}

export interface SubscribeOptions {
  /** Topic names or patterns (`*` one segment, `#` any number). */
  topics: string | string[];
  filter?: MessageFilter;
  /** Retained messages the new subscription receives; default 'none'. */
  replay?: ReplayFrom;
  /** Settings of the subscription's queue when it does not exist yet. */
  queue?: QueueOptions;
}

/**
 * The entry point: queues, topics and consumers over one backend. Producers and consumers in any number of
 * processes share a queue by using the same backend (database file, PostgreSQL database, Redis).
 */
export class Messaging implements MessagingContext {
  readonly backend: MessageBackend;
  readonly clock: Clock;
  readonly codec: Codec;
  readonly offloader: PayloadOffloader | undefined;
  /** Events of every consumer created here. */
  readonly events = new EventEmitter<ConsumerEvent>();
  readonly #retry: RetryPolicy | undefined;
  readonly #settingsCacheMs: number;
  readonly #maxTopicMessageBytes: number;
  readonly #settings = new Map<string, { settings: QueueSettings; fetchedAt: number }>();
  readonly #queues = new Map<string, QueueClient<unknown>>();
  readonly #consumers = new Set<Consumer<unknown>>();

  constructor(options: MessagingOptions) {
    if (typeof options !== 'object' || options === null || typeof options.backend !== 'object') {
      throw new InvalidOptionsError('backend', 'a MessageBackend is required');
    }
    this.backend = options.backend;
    this.clock = options.clock ?? systemClock;
    this.codec = options.codec ?? defaultCodec;
    this.offloader = options.claimCheck;
    this.#settingsCacheMs = options.settingsCacheMs ?? 5000;
    this.#maxTopicMessageBytes = options.maxTopicMessageBytes ?? DEFAULT_QUEUE_SETTINGS.maxMessageBytes;
    this.#retry =
      options.retry === false
        ? undefined
        : (options.retry ??
          retry({
            name: 'messaging',
            maxAttempts: Number.POSITIVE_INFINITY,
            budgetMs: 30_000,
            backoff: exponentialBackoff({ initialMs: 50, maxMs: 2000, jitter: 'equal' }),
            handle: { error: isTransientBackendError },
            clock: this.clock,
          }));
  }

  /** Creates the queue, or updates its settings when it exists. */
  async createQueue(name: string, options: QueueOptions = {}): Promise<QueueSettings> {
    assertQueueName(name);
    const settings = queueSettings(options);
    await this.backend.putQueue(name, settings);
    this.#settings.set(name, { settings, fetchedAt: this.clock.monotonic() });
    return settings;
  }

  async getQueue(name: string): Promise<QueueSettings | undefined> {
    return this.backend.getQueue(name);
  }

  listQueues(): Promise<string[]> {
    return this.backend.listQueues();
  }

  async deleteQueue(name: string): Promise<boolean> {
    this.#settings.delete(name);
    return this.backend.deleteQueue(name);
  }

  /** A handle on a queue; the queue must exist (createQueue) by the time it is used. */
  queue<T = unknown>(name: string): QueueClient<T> {
    assertQueueName(name);
    let client = this.#queues.get(name);
    if (client === undefined) {
      client = new QueueClient<unknown>(this, name);
      this.#queues.set(name, client);
    }
    return client as QueueClient<T>;
  }

  async createTopic(name: string, options: Partial<TopicSettings> = {}): Promise<void> {
    assertTopicName(name);
    const retentionMs = options.retentionMs ?? 0;
    if (typeof retentionMs !== 'number' || !Number.isFinite(retentionMs) || retentionMs < 0) {
      throw new InvalidOptionsError('retentionMs', 'expected a finite non-negative duration in milliseconds');
    }
    await this.backend.putTopic(name, { retentionMs });
  }

  deleteTopic(name: string): Promise<boolean> {
    return this.backend.deleteTopic(name);
  }

  listTopics(): Promise<string[]> {
    return this.backend.listTopics();
  }

  topic<T = unknown>(name: string): TopicClient<T> {
    assertTopicName(name);
    return new TopicClient<T>(this, name, this.#maxTopicMessageBytes);
  }

  /**
   * Makes `queue` a durable subscription: it receives a copy of every message published to a matching topic that
   * passes the filter, from now on (and retained ones when `replay` asks). Creates the queue when missing.
   */
  async subscribe(queue: string, options: SubscribeOptions): Promise<Subscription> {
    assertQueueName(queue);
    const topics = typeof options.topics === 'string' ? [options.topics] : options.topics;
    if (!Array.isArray(topics) || topics.length === 0)
      throw new InvalidOptionsError('topics', 'expected at least one topic');
    topics.forEach((topic, i) => {
      assertTopicName(topic, `topics[${i}]`, true);
    });
    if ((await this.backend.getQueue(queue)) === undefined) await this.createQueue(queue, options.queue);
    const subscription: Subscription = { queue, topics, filter: options.filter };
    await this.backend.subscribe(subscription, options.replay ?? 'none', this.clock.now());
    return subscription;
  }

  unsubscribe(queue: string): Promise<boolean> {
    return this.backend.unsubscribe(queue);
  }

  listSubscriptions(): Promise<Subscription[]> {
    return this.backend.listSubscriptions();
  }

  /**
   * Competing Consumers: runs `handler` for messages of `queue`, `concurrency` at a time, in this process; start as
   * many processes as you like. A message is completed when the handler resolves and abandoned with backoff when
   * it throws.
   */
  consume<T = unknown>(
    queue: string,
    handler: MessageHandler<T>,
    options: ConsumerOptions = {},
  ): Consumer<T> {
    const consumer = new Consumer<T>(this.queue<T>(queue), handler, options, (event) =>
      this.events.emit(event),
    );
    this.#consumers.add(consumer as Consumer<unknown>);
    const forget = () => this.#consumers.delete(consumer as Consumer<unknown>);
    void consumer.stopped.then(forget, forget);
    consumer.start();
    return consumer;
  }

  /** Stops every consumer (each finishing or releasing its messages within `timeoutMs`) and closes the backend. */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    await Promise.all([...this.#consumers].map((consumer) => consumer.close(options)));
    await this.backend.close();
  }

  /** @internal Queue settings, cached for settingsCacheMs, read under the transient retry; throws UnknownQueueError. */
  async settingsOf(queue: string): Promise<QueueSettings> {
    const cached = this.#settings.get(queue);
    const now = this.clock.monotonic();
    if (cached !== undefined && now - cached.fetchedAt < this.#settingsCacheMs) return cached.settings;
    const settings = await this.withRetry(() => this.backend.getQueue(queue));
    if (settings === undefined) {
      this.#settings.delete(queue);
      throw new UnknownQueueError(queue);
    }
    this.#settings.set(queue, { settings, fetchedAt: now });
    return settings;
  }

  /** @internal Runs a backend call under the transient-failure retry. */
  withRetry<R>(operation: () => Promise<R>): Promise<R> {
    return this.#retry === undefined ? operation() : this.#retry.execute(operation);
  }
}

/** Errors thrown on purpose by Stratus are final; anything else from a backend (a socket, a driver) may pass. */
export function isTransientBackendError(error: unknown): boolean {
  return !(error instanceof StratusError);
}
