import {
  type Clock,
  EventEmitter,
  exponentialBackoff,
  InvalidOptionsError,
  StratusError,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import { type RetryPolicy, retry } from '@stratus/resilience';
import { GroupCommit } from '@stratus/sql';
import {
  completeAndReceive,
  type DeadLetter,
  type DeliveredMessage,
  type MessageBackend,
  type MessageFilter,
  type OutgoingMessage,
  type PublishOutcome,
  type QueueSettings,
  type QueueStats,
  type ReplayFrom,
  type SendOutcome,
  type StoredMessage,
  type Subscription,
  type TopicSettings,
} from './backend.js';
import { type Codec, defaultCodec } from './codec.js';
import { Consumer, type ConsumerOptions, type MessageHandler } from './consumer.js';
import {
  InvalidMessageError,
  MessageDecodeError,
  MessageLockLostError,
  MessageTooLargeError,
  UnknownQueueError,
} from './errors.js';
import type { ConsumerEvent, MessageDeadLetteredEvent } from './events.js';
import {
  assertQueueName,
  assertTopicName,
  DEFAULT_QUEUE_SETTINGS,
  type QueueOptions,
  queueSettings,
} from './options.js';
import {
  buildOutgoing,
  type MessageToSend,
  offloadOutgoing,
  type PayloadOffloader,
  type SendOptions,
} from './outgoing.js';
import { ReceivedMessage, type ReceiveMoreRequest } from './received-message.js';

/** Reason a consumer or receive gives when a body cannot be decoded. */
export const DEAD_LETTER_UNDECODABLE = 'undecodable';

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
export class Messaging {
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
    void consumer.stopped.then(() => this.#consumers.delete(consumer as Consumer<unknown>));
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

export interface ReceiveOptions {
  /** Most messages to take; default 1. */
  max?: number;
  /** Lock duration; default the queue's. */
  lockMs?: number;
  /** When nothing is available, wait up to this long for a message; default 0 (return at once). */
  waitMs?: number;
  signal?: AbortSignal;
}

/**
 * Producer and receiver of one queue. It settles the messages it hands out as their Settler: no `implements`
 * clause, since those methods are internal and stripped from the published declarations.
 */
export class QueueClient<T> {
  readonly name: string;
  readonly messaging: Messaging;
  readonly #completions: GroupCommit<string, 'ok' | 'lost'>;

  constructor(messaging: Messaging, name: string) {
    this.messaging = messaging;
    this.name = name;
    // Completions from concurrent handlers share round trips.
    this.#completions = new GroupCommit((tokens) =>
      messaging.withRetry(() => messaging.backend.complete(name, tokens, messaging.clock.now())),
    );
  }

  /** Sends one message; resolves once it is stored. `accepted: false` means a duplicate id within the window. */
  async send(body: T, options: SendOptions = {}): Promise<SendOutcome> {
    const [outcome] = await this.sendBatch([{ ...options, body }]);
    return outcome as SendOutcome;
  }

  /** Sends messages atomically, in order. */
  async sendBatch(messages: readonly MessageToSend<T>[]): Promise<SendOutcome[]> {
    if (!Array.isArray(messages)) throw new InvalidMessageError('messages', 'expected an array');
    const context = { codec: this.messaging.codec, now: this.messaging.clock.now() };
    return this.sendPrepared(messages.map((message) => buildOutgoing(message, context)));
  }

  /**
   * Sends messages already validated and encoded (by buildOutgoing, or read back from an outbox): applies the
   * claim check and the queue's size and session rules, then stores them atomically.
   */
  async sendPrepared(prepared: readonly OutgoingMessage[]): Promise<SendOutcome[]> {
    const { messaging } = this;
    const settings = await messaging.settingsOf(this.name);
    if (settings.sessions && prepared.some((message) => message.sessionId === undefined)) {
      throw new InvalidMessageError(
        'sessionId',
        `queue "${this.name}" has sessions: every message needs a sessionId`,
      );
    }
    return sendOffloaded(
      messaging,
      this.name,
      prepared,
      settings.maxMessageBytes,
      (outgoing, now) => messaging.backend.send(this.name, outgoing, now),
      (outcome) => outcome.accepted,
    );
  }

  /**
   * Peek-lock receive: up to `max` messages, each locked for `lockMs`. Messages whose body cannot be decoded are
   * dead-lettered on the spot and not returned.
   */
  async receive(options: ReceiveOptions = {}): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const max = options.max ?? 1;
    const lockMs = options.lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const waitMs = options.waitMs ?? 0;
    if (waitMs <= 0) {
      const result = await messaging.backend.receive(this.name, { max, lockMs, now: messaging.clock.now() });
      return this.accept(result.messages);
    }
    // Watch before looking, so a message sent between an empty receive and the wait still wakes us.
    const wakeUp = new WakeUp();
    const unwatch = messaging.backend.watch(this.name, () => wakeUp.signal());
    try {
      const deadline = messaging.clock.monotonic() + waitMs;
      for (;;) {
        wakeUp.reset();
        const result = await messaging.backend.receive(this.name, {
          max,
          lockMs,
          now: messaging.clock.now(),
        });
        if (result.messages.length > 0) return this.accept(result.messages);
        const remaining = deadline - messaging.clock.monotonic();
        if (remaining <= 0 || options.signal?.aborted) return [];
        await wakeUp.wait(
          messaging.clock,
          Math.min(remaining, dueIn(messaging.clock, result.nextDueAt)),
          options.signal,
        );
      }
    } finally {
      unwatch();
    }
  }

  /** @internal Decodes deliveries; dead-letters the undecodable ones. */
  async accept(deliveries: readonly DeliveredMessage[]): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const accepted: ReceivedMessage<T>[] = [];
    for (const delivery of deliveries) {
      let body: T;
      try {
        const bytes = messaging.offloader
          ? await messaging.offloader.restore(delivery.headers, delivery.body)
          : delivery.body;
        body = messaging.codec.decode(bytes, delivery.contentType) as T;
      } catch (error) {
        const description =
          error instanceof MessageDecodeError && error.cause instanceof Error
            ? error.cause.message
            : String(error);
        await this.#deadLetterToken(delivery, DEAD_LETTER_UNDECODABLE, description);
        continue;
      }
      accepted.push(new ReceivedMessage<T>(this.name, body, delivery, this));
    }
    return accepted;
  }

  async #deadLetterToken(
    delivery: DeliveredMessage,
    reason: string,
    description: string | undefined,
  ): Promise<void> {
    const { messaging } = this;
    const outcome = await messaging.withRetry(() =>
      messaging.backend.deadLetter(this.name, delivery.lockToken, reason, description, messaging.clock.now()),
    );
    if (outcome === 'ok' && messaging.events.active) {
      messaging.events.emit({
        component: 'messaging',
        name: this.name,
        queue: this.name,
        type: 'message-dead-lettered',
        at: messaging.clock.now(),
        messageId: delivery.id,
        deliveryCount: delivery.deliveryCount,
        reason,
        description,
      } satisfies MessageDeadLetteredEvent);
    }
  }

  peek(options: { limit?: number; afterSequence?: number } = {}): Promise<StoredMessage[]> {
    return this.messaging.backend.peek(this.name, {
      limit: options.limit ?? 100,
      afterSequence: options.afterSequence,
    });
  }

  stats(): Promise<QueueStats> {
    return this.messaging.backend.stats(this.name, this.messaging.clock.now());
  }

  listDeadLetters(options: { limit?: number; afterSequence?: number } = {}): Promise<DeadLetter[]> {
    return this.messaging.backend.listDeadLetters(this.name, {
      limit: options.limit ?? 100,
      afterSequence: options.afterSequence,
    });
  }

  resendDeadLetters(sequences: readonly number[]): Promise<number> {
    return this.messaging.backend.resendDeadLetters(this.name, sequences, this.messaging.clock.now());
  }

  /** Deletes the given dead letters, or all of them. */
  purgeDeadLetters(sequences?: readonly number[]): Promise<number> {
    return this.messaging.backend.purgeDeadLetters(this.name, sequences);
  }

  async getSessionState<S = unknown>(sessionId: string): Promise<S | undefined> {
    const bytes = await this.messaging.backend.getSessionState(this.name, sessionId);
    return bytes === undefined ? undefined : (this.messaging.codec.decode(bytes, undefined) as S);
  }

  async setSessionState(sessionId: string, state: unknown): Promise<void> {
    const bytes = state === undefined ? undefined : this.messaging.codec.encode(state).bytes;
    await this.messaging.backend.setSessionState(this.name, sessionId, bytes);
  }

  /** @internal */
  async complete(message: ReceivedMessage<unknown>): Promise<void> {
    const outcome = await this.#completions.submit(message.lockToken);
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
    await this.messaging.offloader?.release(message.headers);
  }

  /** @internal */
  async completeAndReceive(
    message: ReceivedMessage<unknown>,
    request: ReceiveMoreRequest,
  ): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const lockMs = request.lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const { outcome, received } = await messaging.withRetry(() =>
      completeAndReceive(messaging.backend, this.name, message.lockToken, {
        max: request.max,
        lockMs,
        now: messaging.clock.now(),
        sessionBatch: request.sessionBatch,
      }),
    );
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
    await messaging.offloader?.release(message.headers);
    return received.messages.length === 0 ? [] : this.accept(received.messages);
  }

  /** @internal */
  async abandon(message: ReceivedMessage<unknown>, delayMs: number): Promise<void> {
    const { messaging } = this;
    const outcome = await messaging.withRetry(() =>
      messaging.backend.abandon(this.name, message.lockToken, delayMs, messaging.clock.now()),
    );
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
  }

  /** @internal */
  async deadLetter(
    message: ReceivedMessage<unknown>,
    reason: string,
    description: string | undefined,
  ): Promise<void> {
    const { messaging } = this;
    const outcome = await messaging.withRetry(() =>
      messaging.backend.deadLetter(this.name, message.lockToken, reason, description, messaging.clock.now()),
    );
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
  }

  /** @internal */
  async renew(message: ReceivedMessage<unknown>, lockMs: number | undefined): Promise<number> {
    const { messaging } = this;
    const duration = lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const [until] = await messaging.withRetry(() =>
      messaging.backend.renewLocks(this.name, [message.lockToken], duration, messaging.clock.now()),
    );
    if (until === undefined) throw new MessageLockLostError(this.name, message.id);
    return until;
  }
}

/** Publisher of one topic. */
export class TopicClient<T> {
  readonly name: string;
  readonly messaging: Messaging;
  readonly #maxBytes: number;

  constructor(messaging: Messaging, name: string, maxBytes: number) {
    this.messaging = messaging;
    this.name = name;
    this.#maxBytes = maxBytes;
  }

  async publish(body: T, options: SendOptions = {}): Promise<PublishOutcome> {
    const [outcome] = await this.publishBatch([{ ...options, body }]);
    return outcome as PublishOutcome;
  }

  /** Publishes messages in order; each subscribed queue gets its copies atomically. */
  async publishBatch(messages: readonly MessageToSend<T>[]): Promise<PublishOutcome[]> {
    if (!Array.isArray(messages)) throw new InvalidMessageError('messages', 'expected an array');
    const context = { codec: this.messaging.codec, now: this.messaging.clock.now() };
    return this.publishPrepared(messages.map((message) => buildOutgoing(message, context)));
  }

  /** Publishes messages already validated and encoded (see QueueClient.sendPrepared). */
  publishPrepared(prepared: readonly OutgoingMessage[]): Promise<PublishOutcome[]> {
    const { messaging } = this;
    return sendOffloaded(
      messaging,
      this.name,
      prepared,
      this.#maxBytes,
      (outgoing, now) => messaging.backend.publish(this.name, outgoing, now),
      (outcome) => outcome.deliveredTo.length > 0,
    );
  }
}

/**
 * Offloads large bodies to the claim check, enforces the size limit, sends, and deletes offloaded payloads that
 * no queue kept (duplicates, failed sends) so they do not wait for the sweeper.
 */
async function sendOffloaded<R>(
  messaging: Messaging,
  destination: string,
  prepared: readonly OutgoingMessage[],
  maxBytes: number,
  send: (outgoing: readonly OutgoingMessage[], now: number) => Promise<R[]>,
  kept: (outcome: R) => boolean,
): Promise<R[]> {
  const { offloader } = messaging;
  const outgoing =
    offloader === undefined
      ? prepared
      : await Promise.all(prepared.map((message) => offloadOutgoing(message, offloader)));
  const release = async (indexes: number[]) => {
    for (const i of indexes) {
      if (outgoing[i] !== prepared[i]) await offloader?.release(outgoing[i]?.headers).catch(() => {});
    }
  };
  let outcomes: R[];
  try {
    for (const message of outgoing) {
      if (message.body.byteLength > maxBytes)
        throw new MessageTooLargeError(destination, message.body.byteLength, maxBytes);
    }
    const now = messaging.clock.now();
    outcomes = await messaging.withRetry(() => send(outgoing, now));
  } catch (error) {
    await release(outgoing.map((_, i) => i));
    throw error;
  }
  await release(outcomes.flatMap((outcome, i) => (kept(outcome) ? [] : [i])));
  return outcomes;
}

/** Milliseconds until `dueAt` (at least 1), or Infinity when nothing is due. */
export function dueIn(clock: Clock, dueAt: number | undefined): number {
  return dueAt === undefined ? Number.POSITIVE_INFINITY : Math.max(1, dueAt - clock.now());
}

/** A wake-up that is not lost when it comes before anyone waits for it. */
class WakeUp {
  #signalled = false;
  #wake: (() => void) | undefined;

  signal(): void {
    this.#signalled = true;
    this.#wake?.();
  }

  reset(): void {
    this.#signalled = false;
  }

  /** Resolves on a signal (also one already given since reset), after `ms`, or when `abort` fires. */
  wait(clock: Clock, ms: number, abort?: AbortSignal): Promise<void> {
    if (this.#signalled || abort?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = () => {
        this.#wake = undefined;
        if (timer !== undefined) clock.clearTimeout(timer);
        abort?.removeEventListener('abort', done);
        resolve();
      };
      this.#wake = done;
      if (Number.isFinite(ms)) timer = clock.setTimeout(done, ms);
      abort?.addEventListener('abort', done, { once: true });
    });
  }
}
