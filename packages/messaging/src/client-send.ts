import type { OutgoingMessage } from './backend.js';
import { InvalidMessageError, MessageTooLargeError } from './errors.js';
import type { MessagingContext } from './messaging-context.js';
import { buildOutgoing, type MessageToSend, offloadOutgoing } from './outgoing.js';

// The way out that queue and topic clients share.

/** Validates and encodes a batch a producer gave (see buildOutgoing). */
export function buildBatch<T>(
  messaging: MessagingContext,
  messages: readonly MessageToSend<T>[],
): OutgoingMessage[] {
  if (!Array.isArray(messages)) throw new InvalidMessageError('messages', 'expected an array');
  const context = { codec: messaging.codec, now: messaging.clock.now() };
  return messages.map((message) => buildOutgoing(message, context));
}

/**
 * Offloads large bodies to the claim check, enforces the size limit, sends, and deletes offloaded payloads that
 * no queue kept (duplicates, failed sends) so they do not wait for the sweeper.
 */
export async function sendOffloaded<R>(
  messaging: MessagingContext,
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
