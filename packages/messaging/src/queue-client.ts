import { GroupCommit } from '@stratus/sql';
import {
  completeAndReceive,
  DEAD_LETTER_EXPIRED,
  type DeadLetter,
  type DeliveredMessage,
  holdsSession,
  type OutgoingMessage,
  type QueueStats,
  type SendOutcome,
  type SettleOutcome,
  type StoredMessage,
} from './backend.js';
import { buildBatch, sendOffloaded } from './client-send.js';
import { InvalidMessageError, MessageDecodeError, MessageLockLostError } from './errors.js';
import type { MessageDeadLetteredEvent } from './events.js';
import type { MessagingContext } from './messaging-context.js';
import type { MessageToSend, SendOptions } from './outgoing.js';
import { ReceivedMessage, type ReceiveMoreRequest } from './received-message.js';
import { dueIn, WakeUp } from './wake-up.js';

/** Reason a consumer or receive gives when a body cannot be decoded. */
export const DEAD_LETTER_UNDECODABLE = 'undecodable';

export interface ReceiveOptions {
  /** Most messages to take; default 1. */
  max?: number;
  /** Lock duration; default the queue's. */
  lockMs?: number;
  /** When nothing is available, wait up to this long for a message; default 0 (return at once). */
  waitMs?: number;
  signal?: AbortSignal;
}

/**
 * Producer and receiver of one queue. It settles the messages it hands out as their Settler: no `implements`
 * clause, since those methods are internal and stripped from the published declarations.
 */
export class QueueClient<T> {
  readonly name: string;
  readonly messaging: MessagingContext;
  readonly #completions: GroupCommit<string, 'ok' | 'lost'>;

  constructor(messaging: MessagingContext, name: string) {
    this.messaging = messaging;
    this.name = name;
    // Completions from concurrent handlers share round trips.
    this.#completions = new GroupCommit((tokens) =>
      messaging.withRetry(() => messaging.backend.complete(name, tokens, messaging.clock.now())),
    );
  }

  /** Sends one message; resolves once it is stored. `accepted: false` means a duplicate id within the window. */
  async send(body: T, options: SendOptions = {}): Promise<SendOutcome> {
    const [outcome] = await this.sendBatch([{ ...options, body }]);
    return outcome as SendOutcome;
  }

  /** Sends messages atomically, in order. */
  async sendBatch(messages: readonly MessageToSend<T>[]): Promise<SendOutcome[]> {
    return this.sendPrepared(buildBatch(this.messaging, messages));
  }

  /**
   * Sends messages already validated and encoded (by buildOutgoing, or read back from an outbox): applies the
   * claim check and the queue's size and session rules, then stores them atomically.
   */
  async sendPrepared(prepared: readonly OutgoingMessage[]): Promise<SendOutcome[]> {
    const { messaging } = this;
    const settings = await messaging.settingsOf(this.name);
    if (settings.sessions && prepared.some((message) => message.sessionId === undefined)) {
      throw new InvalidMessageError(
        'sessionId',
        `queue "${this.name}" has sessions: every message needs a sessionId`,
      );
    }
    return sendOffloaded(
      messaging,
      this.name,
      prepared,
      settings.maxMessageBytes,
      (outgoing, now) => messaging.backend.send(this.name, outgoing, now),
      (outcome) => outcome.accepted,
    );
  }

  /**
   * Peek-lock receive: up to `max` messages, each locked for `lockMs`. Messages whose body cannot be decoded are
   * dead-lettered on the spot and not returned.
   */
  async receive(options: ReceiveOptions = {}): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const max = options.max ?? 1;
    const lockMs = options.lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const waitMs = options.waitMs ?? 0;
    if (waitMs <= 0) {
      const result = await messaging.backend.receive(this.name, { max, lockMs, now: messaging.clock.now() });
      return this.accept(result.messages);
    }
    // Watch before looking, so a message sent between an empty receive and the wait still wakes us.
    const wakeUp = new WakeUp();
    const unwatch = messaging.backend.watch(this.name, () => wakeUp.signal());
    try {
      const deadline = messaging.clock.monotonic() + waitMs;
      for (;;) {
        wakeUp.reset();
        const result = await messaging.backend.receive(this.name, {
          max,
          lockMs,
          now: messaging.clock.now(),
        });
        if (result.messages.length > 0) return this.accept(result.messages);
        const remaining = deadline - messaging.clock.monotonic();
        if (remaining <= 0 || options.signal?.aborted) return [];
        await wakeUp.wait(
          messaging.clock,
          Math.min(remaining, dueIn(messaging.clock, result.nextDueAt)),
          options.signal,
        );
      }
    } finally {
      unwatch();
    }
  }

  /** @internal Decodes deliveries; dead-letters the undecodable ones. */
  async accept(deliveries: readonly DeliveredMessage[]): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const accepted: ReceivedMessage<T>[] = [];
    for (const delivery of deliveries) {
      let body: T;
      try {
        const bytes = messaging.offloader
          ? await messaging.offloader.restore(delivery.headers, delivery.body)
          : delivery.body;
        body = messaging.codec.decode(bytes, delivery.contentType) as T;
      } catch (error) {
        const description =
          error instanceof MessageDecodeError && error.cause instanceof Error
            ? error.cause.message
            : String(error);
        await this.#deadLetterToken(delivery, DEAD_LETTER_UNDECODABLE, description);
        continue;
      }
      accepted.push(new ReceivedMessage<T>(this.name, body, delivery, this));
    }
    return accepted;
  }

  async #deadLetterToken(
    delivery: DeliveredMessage,
    reason: string,
    description: string | undefined,
  ): Promise<void> {
    const outcome = await this.#deadLetterLocked(delivery.lockToken, reason, description);
    if (outcome === 'ok') await this.#deadLettered(delivery, reason, description);
  }

  /**
   * After a dead-lettering: whether the dead letter holds its session, told to listeners of `messaging.events`
   * (for an operator, the cue to look at the dead-letter queue).
   */
  async #deadLettered(
    delivery: DeliveredMessage,
    reason: string,
    description: string | undefined,
  ): Promise<boolean> {
    const { messaging } = this;
    const settings = await messaging.settingsOf(this.name).catch(() => undefined);
    // Settings unknown for now (the backend went away meanwhile): the default, which holds, is the safe guess.
    const holds =
      settings === undefined
        ? delivery.sessionId !== undefined && reason !== DEAD_LETTER_EXPIRED
        : holdsSession(settings, delivery.sessionId, reason);
    if (messaging.events.active) {
      messaging.events.emit({
        component: 'messaging',
        name: this.name,
        queue: this.name,
        type: 'message-dead-lettered',
        at: messaging.clock.now(),
        messageId: delivery.id,
        sequence: delivery.sequence,
        sessionId: delivery.sessionId,
        deliveryCount: delivery.deliveryCount,
        reason,
        description,
        holdsSession: holds,
      } satisfies MessageDeadLetteredEvent);
    }
    return holds;
  }

  peek(options: { limit?: number; afterSequence?: number } = {}): Promise<StoredMessage[]> {
    return this.messaging.backend.peek(this.name, {
      limit: options.limit ?? 100,
      afterSequence: options.afterSequence,
    });
  }

  stats(): Promise<QueueStats> {
    return this.messaging.backend.stats(this.name, this.messaging.clock.now());
  }

  listDeadLetters(options: { limit?: number; afterSequence?: number } = {}): Promise<DeadLetter[]> {
    return this.messaging.backend.listDeadLetters(this.name, {
      limit: options.limit ?? 100,
      afterSequence: options.afterSequence,
    });
  }

  /**
   * Puts dead letters back in the queue as new deliveries. One that held its session is delivered before the
   * messages that waited behind it.
   */
  resendDeadLetters(sequences: readonly number[]): Promise<number> {
    return this.messaging.backend.resendDeadLetters(this.name, sequences, this.messaging.clock.now());
  }

  /** Deletes the given dead letters, or all of them. A session one of them held goes on with its next message. */
  purgeDeadLetters(sequences?: readonly number[]): Promise<number> {
    return this.messaging.backend.purgeDeadLetters(this.name, sequences, this.messaging.clock.now());
  }

  async getSessionState<S = unknown>(sessionId: string): Promise<S | undefined> {
    const bytes = await this.messaging.backend.getSessionState(this.name, sessionId);
    return bytes === undefined ? undefined : (this.messaging.codec.decode(bytes, undefined) as S);
  }

  async setSessionState(sessionId: string, state: unknown): Promise<void> {
    const bytes = state === undefined ? undefined : this.messaging.codec.encode(state).bytes;
    await this.messaging.backend.setSessionState(this.name, sessionId, bytes);
  }

  /** @internal */
  async complete(message: ReceivedMessage<unknown>): Promise<void> {
    const outcome = await this.#completions.submit(message.lockToken);
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
    await this.messaging.offloader?.release(message.headers);
  }

  /** @internal */
  async completeAndReceive(
    message: ReceivedMessage<unknown>,
    request: ReceiveMoreRequest,
  ): Promise<ReceivedMessage<T>[]> {
    const { messaging } = this;
    const lockMs = request.lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const { outcome, received } = await messaging.withRetry(() =>
      completeAndReceive(messaging.backend, this.name, message.lockToken, {
        max: request.max,
        lockMs,
        now: messaging.clock.now(),
        sessionBatch: request.sessionBatch,
      }),
    );
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
    await messaging.offloader?.release(message.headers);
    return received.messages.length === 0 ? [] : this.accept(received.messages);
  }

  /** @internal */
  async abandon(message: ReceivedMessage<unknown>, delayMs: number): Promise<void> {
    const { messaging } = this;
    const outcome = await messaging.withRetry(() =>
      messaging.backend.abandon(this.name, message.lockToken, delayMs, messaging.clock.now()),
    );
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
  }

  /** @internal Resolves with whether the dead letter holds its session. */
  async deadLetter(
    message: ReceivedMessage<unknown>,
    reason: string,
    description: string | undefined,
  ): Promise<boolean> {
    const outcome = await this.#deadLetterLocked(message.lockToken, reason, description);
    if (outcome === 'lost') throw new MessageLockLostError(this.name, message.id);
    return this.#deadLettered(message.delivery, reason, description);
  }

  /** Dead-letters the delivery locked by `lockToken`, under the transient retry. */
  #deadLetterLocked(
    lockToken: string,
    reason: string,
    description: string | undefined,
  ): Promise<SettleOutcome> {
    const { messaging } = this;
    return messaging.withRetry(() =>
      messaging.backend.deadLetter(this.name, lockToken, reason, description, messaging.clock.now()),
    );
  }

  /** @internal */
  async renew(message: ReceivedMessage<unknown>, lockMs: number | undefined): Promise<number> {
    const { messaging } = this;
    const duration = lockMs ?? (await messaging.settingsOf(this.name)).lockDurationMs;
    const [until] = await messaging.withRetry(() =>
      messaging.backend.renewLocks(this.name, [message.lockToken], duration, messaging.clock.now()),
    );
    if (until === undefined) throw new MessageLockLostError(this.name, message.id);
    return until;
  }
}
