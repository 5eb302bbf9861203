import type { DeliveredMessage } from './backend.js';
import { MessageAlreadySettledError } from './errors.js';

/** How a received message settles itself; implemented by the queue client that received it. */
export interface Settler {
  complete(message: ReceivedMessage<unknown>): Promise<void>;
  abandon(message: ReceivedMessage<unknown>, delayMs: number): Promise<void>;
  /** Resolves with whether the dead letter holds its session (holdsSession in backend.ts). */
  deadLetter(
    message: ReceivedMessage<unknown>,
    reason: string,
    description: string | undefined,
  ): Promise<boolean>;
  renew(message: ReceivedMessage<unknown>, lockMs: number | undefined): Promise<number>;
  completeAndReceive(
    message: ReceivedMessage<unknown>,
    request: ReceiveMoreRequest,
  ): Promise<ReceivedMessage<unknown>[]>;
}

export interface ReceiveMoreRequest {
  /** How many messages to receive at most. */
  readonly max: number;
  /** How long to lock them (default: the queue's lock duration). */
  readonly lockMs?: number;
  /** How many of a session's messages may come locked together (ReceiveRequest.sessionBatch); default 1. */
  readonly sessionBatch?: number;
}

export type Settlement = 'completed' | 'abandoned' | 'dead-lettered';

/**
 * One delivery of a message, locked for this receiver until `lockedUntil`. Settle it exactly once: complete it
 * when its work is done, abandon it to have it delivered again, or dead-letter it. Settling after the lock was
 * lost throws MessageLockLostError.
 */
export class ReceivedMessage<T> {
  readonly queue: string;
  readonly body: T;
  /** The delivery as the backend returned it (raw body bytes, every property). */
  readonly delivery: DeliveredMessage;
  #lockedUntil: number;
  #settlement: Settlement | undefined;
  #holdsSession = false;
  readonly #settler: Settler;

  constructor(queue: string, body: T, delivery: DeliveredMessage, settler: Settler) {
    this.queue = queue;
    this.body = body;
    this.delivery = delivery;
    this.#lockedUntil = delivery.lockedUntil;
    this.#settler = settler;
  }

  get id(): string {
    return this.delivery.id;
  }
  get sequence(): number {
    return this.delivery.sequence;
  }
  get deliveryCount(): number {
    return this.delivery.deliveryCount;
  }
  get enqueuedAt(): number {
    return this.delivery.enqueuedAt;
  }
  get correlationId(): string | undefined {
    return this.delivery.correlationId ?? undefined;
  }
  get replyTo(): string | undefined {
    return this.delivery.replyTo ?? undefined;
  }
  get subject(): string | undefined {
    return this.delivery.subject ?? undefined;
  }
  get contentType(): string | undefined {
    return this.delivery.contentType ?? undefined;
  }
  get headers(): Readonly<Record<string, string>> {
    return this.delivery.headers ?? {};
  }
  get sessionId(): string | undefined {
    return this.delivery.sessionId ?? undefined;
  }
  get priority(): number {
    return this.delivery.priority;
  }
  get lockToken(): string {
    return this.delivery.lockToken;
  }
  get lockedUntil(): number {
    return this.#lockedUntil;
  }
  /** True once complete, abandon or dead-letter was called. */
  get settled(): boolean {
    return this.#settlement !== undefined;
  }

  /** How the message was settled, once it was. */
  get settlement(): Settlement | undefined {
    return this.#settlement;
  }

  /**
   * True once dead-lettered in a way that holds its session: the session's later messages (and those locked with
   * this one) wait until the dead letter is resent or purged (the queue's `onSessionDeadLetter`).
   */
  get holdsSession(): boolean {
    return this.#holdsSession;
  }

  async complete(): Promise<void> {
    this.#settle('completed');
    await this.#settler.complete(this);
  }

  /**
   * Completes the message and receives up to `max` more from its queue, in one round trip where the backend can
   * (SQLite: one transaction). On a sessions queue the session's next message can come back at once. Throws
   * MessageLockLostError, receiving nothing, when the lock was lost.
   */
  async completeAndReceive(request: ReceiveMoreRequest): Promise<ReceivedMessage<T>[]> {
    this.#settle('completed');
    return (await this.#settler.completeAndReceive(this, request)) as ReceivedMessage<T>[];
  }

  /** Gives the message back; it is delivered again after `delayMs` (default at once). */
  async abandon(options: { delayMs?: number } = {}): Promise<void> {
    this.#settle('abandoned');
    await this.#settler.abandon(this, options.delayMs ?? 0);
  }

  async deadLetter(reason: string, description?: string): Promise<void> {
    this.#settle('dead-lettered');
    this.#holdsSession = await this.#settler.deadLetter(this, reason, description);
  }

  /** Extends the lock by `lockMs` (default: the queue's lock duration) from now; resolves with the new expiry. */
  async renewLock(lockMs?: number): Promise<number> {
    this.#lockedUntil = await this.#settler.renew(this, lockMs);
    return this.#lockedUntil;
  }

  /** @internal Set by the consumer's batched renewals. */
  extendedTo(lockedUntil: number): void {
    this.#lockedUntil = lockedUntil;
  }

  #settle(settlement: Settlement): void {
    if (this.#settlement !== undefined) throw new MessageAlreadySettledError(this.queue, this.id);
    this.#settlement = settlement;
  }
}
