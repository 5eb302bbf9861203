import type { OutgoingMessage, PublishOutcome } from './backend.js';
import { buildBatch, sendOffloaded } from './client-send.js';
import type { MessagingContext } from './messaging-context.js';
import type { MessageToSend, SendOptions } from './outgoing.js';

/** Publisher of one topic. */
export class TopicClient<T> {
  readonly name: string;
  readonly messaging: MessagingContext;
  readonly #maxBytes: number;

  constructor(messaging: MessagingContext, name: string, maxBytes: number) {
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
    return this.publishPrepared(buildBatch(this.messaging, messages));
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
