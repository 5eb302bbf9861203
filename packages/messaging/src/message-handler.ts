import type { ReceivedMessage } from './received-message.js';

export interface SessionContext {
  readonly id: string;
  getState<S = unknown>(): Promise<S | undefined>;
  /** Undefined clears the state. */
  setState(state: unknown): Promise<void>;
}

export interface HandlerContext {
  /** Aborts when the message's lock is lost or the consumer's shutdown deadline passes. */
  readonly signal: AbortSignal;
  /** The message's session on a queue with sessions (this consumer holds it while the handler runs). */
  readonly session: SessionContext | undefined;
  /**
   * With `sessionBatch`, the messages of this one's batch that would run after it, in order (empty otherwise). A
   * handler that can do their work together with this message's, for less than one by one, does so and calls
   * `take`.
   */
  readonly following: readonly ReceivedMessage<unknown>[];
  /**
   * Says that this handler did the work of the first `count` messages of `following` too: they do not run, and
   * they complete with this message when the handler resolves (those the handler settled itself excepted). Call it
   * once that work is done: if the handler throws, this message is retried and the taken ones go back with it.
   */
  take(count: number): void;
}

/**
 * Processes one message. Resolve to have it completed (unless the handler settled it itself); throw to have it
 * abandoned and retried after a backoff, or dead-lettered once it used up the queue's deliveries.
 */
export type MessageHandler<T> = (
  message: ReceivedMessage<T>,
  context: HandlerContext,
) => Promise<void> | void;
