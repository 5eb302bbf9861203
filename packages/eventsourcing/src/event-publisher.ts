import { assertFunction, InvalidOptionsError } from '@stratus/core';
import type { MessageToSend, Messaging } from '@stratus/messaging';
import type { RecordedEvent } from './backend.js';
import type { EventStore } from './event-store.js';
import type { Subscription, SubscriptionOptions } from './subscription.js';

/** The message body of a published event: the recorded event as it is in the store. */
export type PublishedEvent = RecordedEvent;

export interface EventPublisherOptions {
  /** Names the publisher's checkpoint (`publisher:<name>`). */
  readonly name: string;
  readonly messaging: Messaging;
  /**
   * The topic of each event: one name, or a function choosing by event (the Journey routes Order events and
   * SeatsAvailability events to different topics); undefined skips the event.
   */
  readonly topic: string | ((event: RecordedEvent) => string | undefined);
  /** Events read and published per round; default 500. */
  readonly batchSize?: number;
  /** Passed to the subscription: retries after a failed publish, safety poll. */
  readonly retryBackoff?: SubscriptionOptions['retryBackoff'];
  readonly pollIntervalMs?: number;
}

/**
 * Publishes every appended event to messaging topics, reliably, with the event store as the outbox: a checkpointed
 * subscription reads events in order, publishes them, then moves its checkpoint. After a crash it publishes again
 * from the checkpoint, and the deterministic message ids (`<stream>_<version>`, as the CQRS Journey does) let the
 * topics' duplicate detection drop what was already sent. Each message's session id is its stream, so consumers
 * with sessions see each aggregate's events in order; the subject is the event type, for subscription filters.
 */
export class EventPublisher {
  readonly name: string;
  readonly #store: EventStore;
  readonly #options: EventPublisherOptions;
  #subscription: Subscription | undefined;

  constructor(store: EventStore, options: EventPublisherOptions) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    const { name, messaging, topic } = options;
    if (typeof name !== 'string' || name.length === 0)
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    if (typeof messaging !== 'object' || messaging === null || typeof messaging.topic !== 'function') {
      throw new InvalidOptionsError('messaging', 'expected a Messaging instance');
    }
    if (typeof topic !== 'string') assertFunction('topic', topic);
    this.name = name;
    this.#store = store;
    this.#options = options;
  }

  /** The message an event becomes. */
  static messageOf(event: RecordedEvent): MessageToSend<PublishedEvent> {
    const correlationId = event.metadata.correlationId;
    return {
      body: event,
      id: `${event.streamName}_${event.streamVersion}`,
      sessionId: event.streamName,
      subject: event.type,
      ...(typeof correlationId === 'string' ? { correlationId } : {}),
      headers: {
        'event-id': event.id,
        'stream-name': event.streamName,
        'stream-version': String(event.streamVersion),
        'schema-version': String(event.schemaVersion),
      },
    };
  }

  /** Starts publishing (catching up first); the returned subscription reports progress and failures. */
  start(): Subscription {
    if (this.#subscription !== undefined)
      throw new Error(`Event publisher "${this.name}" is already started`);
    const { topic, messaging, batchSize, retryBackoff, pollIntervalMs } = this.#options;
    const topicOf = typeof topic === 'string' ? () => topic : topic;
    this.#subscription = this.#store.subscribe({
      name: `publisher:${this.name}`,
      batchSize,
      retryBackoff,
      pollIntervalMs,
      handleBatch: async (events) => {
        // Consecutive events for one topic go in one call, in order.
        let run: MessageToSend<PublishedEvent>[] = [];
        let runTopic: string | undefined;
        const flush = async () => {
          if (runTopic !== undefined && run.length > 0)
            await messaging.topic<PublishedEvent>(runTopic).publishBatch(run);
          run = [];
        };
        for (const event of events) {
          const target = topicOf(event);
          if (target === undefined) continue;
          if (target !== runTopic) {
            await flush();
            runTopic = target;
          }
          run.push(EventPublisher.messageOf(event));
        }
        await flush();
      },
    });
    return this.#subscription;
  }

  async stop(): Promise<void> {
    await this.#subscription?.stop();
    this.#subscription = undefined;
  }
}
