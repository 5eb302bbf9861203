import { MessageLockLostError } from './errors.js';
import type { ConsumerEvent, SettleFailedEvent } from './events.js';
import type { QueueClient } from './queue-client.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A consumer event before it is stamped with the queue and the time. */
export type ConsumerEventBody = DistributiveOmit<ConsumerEvent, 'component' | 'name' | 'queue' | 'at'>;

export type ConsumerEventSink = (event: ConsumerEventBody) => void;

/** Stamps the events of a consumer of `queue` and passes them to `emit`, only while someone listens. */
export function consumerEventSink(
  queue: QueueClient<unknown>,
  emit: (event: ConsumerEvent) => void,
): ConsumerEventSink {
  const { messaging, name } = queue;
  return (event) => {
    if (!messaging.events.active) return;
    emit({ ...event, component: 'messaging', name, queue: name, at: messaging.clock.now() } as ConsumerEvent);
  };
}

/** The event for a settlement that threw: the message's lock was lost, or the backend failed. */
export function settleFailure(
  operation: SettleFailedEvent['operation'],
  messageId: string,
  error: unknown,
): ConsumerEventBody {
  return error instanceof MessageLockLostError
    ? { type: 'lock-lost', messageId }
    : { type: 'settle-failed', operation, error };
}
