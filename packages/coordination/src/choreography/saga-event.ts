import { createHash } from 'node:crypto';

/**
 * What an event says about the saga: the initiator started it; a participant did its part (step), could not
 * (failed: others compensate), undid its part (compensated), or finished the saga (completed).
 */
export type SagaEventKind = 'started' | 'step' | 'failed' | 'compensated' | 'completed';

export const SAGA_EVENT_KINDS: readonly SagaEventKind[] = [
  'started',
  'step',
  'failed',
  'compensated',
  'completed',
];

/** The body of every message a choreographed saga publishes on its topic. */
export interface SagaEventBody<Data = unknown> {
  readonly type: string;
  /** Also the message's correlation id, so every message of a saga can be traced. */
  readonly sagaId: string;
  /** Who published it ('initiator' for the start). */
  readonly participant: string;
  readonly kind: SagaEventKind;
  readonly data: Data;
}

/** Message headers that let subscriptions filter on the kind and the publisher without decoding bodies. */
export const KIND_HEADER = 'saga-kind';
export const PARTICIPANT_HEADER = 'saga-participant';

/**
 * A message id derived from its parts (SHA-256, hex): handling the same message again publishes the same ids, so
 * the subscribed queues' duplicate detection drops the copies.
 */
export function sagaMessageId(...parts: readonly string[]): string {
  const hash = createHash('sha256');
  // Length-prefixed so that ('ab', 'c') and ('a', 'bc') differ.
  for (const part of parts) hash.update(`${part.length}:${part};`);
  return `saga-${hash.digest('hex').slice(0, 40)}`;
}
