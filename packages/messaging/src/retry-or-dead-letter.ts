import type { Backoff } from '@stratus/core';
import { DEAD_LETTER_MAX_DELIVERIES } from './backend.js';
import { type ConsumerEventSink, settleFailure } from './consumer-events.js';
import type { QueueClient } from './queue-client.js';
import type { ReceivedMessage } from './received-message.js';

/**
 * Settles a message whose handler threw `error`: dead-letters it once it used up the queue's deliveries (the queue
 * client reports `message-dead-lettered`), abandons it to come back after `retryBackoff` otherwise, and says which
 * it did (or why it could not). Resolves true when it dead-lettered the message.
 */
export async function retryOrDeadLetter(
  queue: QueueClient<unknown>,
  message: ReceivedMessage<unknown>,
  error: unknown,
  retryBackoff: Backoff,
  event: ConsumerEventSink,
): Promise<boolean> {
  try {
    const settings = await queue.messaging.settingsOf(queue.name);
    if (message.deliveryCount >= settings.maxDeliveryCount) {
      const description = error instanceof Error ? error.message : String(error);
      await message.deadLetter(DEAD_LETTER_MAX_DELIVERIES, description);
      return true;
    }
    const retryInMs = Math.round(retryBackoff.delay(message.deliveryCount, 0));
    await message.abandon({ delayMs: retryInMs });
    event({
      type: 'message-failed',
      messageId: message.id,
      deliveryCount: message.deliveryCount,
      error,
      retryInMs,
    });
  } catch (settleError) {
    event(settleFailure('abandon', message.id, settleError));
  }
  return false;
}
