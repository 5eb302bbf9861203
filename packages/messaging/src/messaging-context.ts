import type { Clock, EventEmitter } from '@stratus/core';
import type { MessageBackend, QueueSettings } from './backend.js';
import type { Codec } from './codec.js';
import type { ConsumerEvent } from './events.js';
import type { PayloadOffloader } from './outgoing.js';

/**
 * What queue and topic clients and consumers use of the Messaging that made them. Messaging implements it; they
 * depend on this instead, so they need not import the facade that imports them.
 */
export interface MessagingContext {
  readonly backend: MessageBackend;
  readonly clock: Clock;
  readonly codec: Codec;
  readonly offloader: PayloadOffloader | undefined;
  /** Events of every consumer. */
  readonly events: EventEmitter<ConsumerEvent>;
  /**
   * Queue settings, cached for a while, read under the transient retry; throws UnknownQueueError.
   * @internal
   */
  settingsOf(queue: string): Promise<QueueSettings>;
  /**
   * Runs a backend call under the transient-failure retry.
   * @internal
   */
  withRetry<R>(operation: () => Promise<R>): Promise<R>;
}
