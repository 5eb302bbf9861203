import type { StratusEvent } from '@stratus/core';
import type { PoisonMessageError } from './errors.js';

interface Base extends StratusEvent {
  readonly component: 'messaging';
  readonly queue: string;
}

/** A handler finished and its message was completed. */
export interface MessageCompletedEvent extends Base {
  readonly type: 'message-completed';
  readonly messageId: string;
  readonly deliveryCount: number;
  readonly durationMs: number;
}

/** A handler failed; the message was abandoned to come back after `retryInMs`. */
export interface MessageFailedEvent extends Base {
  readonly type: 'message-failed';
  readonly messageId: string;
  readonly deliveryCount: number;
  readonly error: unknown;
  readonly retryInMs: number;
}

/**
 * A message was dead-lettered: by a consumer after its last delivery, for an undecodable body, or by a handler.
 * With `holdsSession` its session's later messages wait until it is resent or purged (the operator's cue).
 */
export interface MessageDeadLetteredEvent extends Base {
  readonly type: 'message-dead-lettered';
  readonly messageId: string;
  readonly sequence: number;
  readonly sessionId: string | undefined;
  readonly deliveryCount: number;
  readonly reason: string;
  readonly description: string | undefined;
  readonly holdsSession: boolean;
}

/** A delivery could not be settled or renewed because its lock had expired and the message went to someone else. */
export interface LockLostEvent extends Base {
  readonly type: 'lock-lost';
  readonly messageId: string;
}

/** Receiving failed (the backend is unreachable, say); the consumer tries again after `retryInMs`. */
export interface ReceiveFailedEvent extends Base {
  readonly type: 'receive-failed';
  readonly error: unknown;
  readonly retryInMs: number;
}

/** Renewing, completing or abandoning failed for a reason other than a lost lock. */
export interface SettleFailedEvent extends Base {
  readonly type: 'settle-failed';
  readonly operation: 'complete' | 'abandon' | 'dead-letter' | 'renew';
  readonly error: unknown;
}

export interface ConsumerStoppedEvent extends Base {
  readonly type: 'consumer-stopped';
  /** Handlers that finished during the shutdown. */
  readonly drained: number;
  /** Messages given back (prefetched ones, and handlers still running at the deadline). */
  readonly released: number;
  /** Why the consumer stopped by itself (`onPoison: 'stop'`); absent when it was closed. */
  readonly error?: PoisonMessageError;
}

export type ConsumerEvent =
  | MessageCompletedEvent
  | MessageFailedEvent
  | MessageDeadLetteredEvent
  | LockLostEvent
  | ReceiveFailedEvent
  | SettleFailedEvent
  | ConsumerStoppedEvent;
