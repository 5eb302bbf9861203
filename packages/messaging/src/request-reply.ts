import {
  assertDuration,
  InvalidOptionsError,
  OperationCancelledError,
  randomId,
  StratusError,
  type TimerHandle,
  uuidv7,
} from '@stratus/core';
import type { Consumer } from './consumer.js';
import type { HandlerContext, MessageHandler } from './message-handler.js';
import type { Messaging } from './messaging.js';
import { assertQueueName, type QueueOptions } from './options.js';
import type { SendOptions } from './outgoing.js';
import type { ReceivedMessage } from './received-message.js';

/** No reply came within the request's timeout. */
export class RequestTimeoutError extends StratusError {
  readonly queue: string;
  readonly correlationId: string;
  constructor(queue: string, correlationId: string, timeoutMs: number) {
    super(
      'ERR_STRATUS_REQUEST_TIMEOUT',
      `No reply from queue "${queue}" within ${timeoutMs} ms (request ${correlationId})`,
    );
    this.queue = queue;
    this.correlationId = correlationId;
  }
}

/** The responder answered with an error (see `respond`). */
export class RemoteRequestError extends StratusError {
  readonly remoteMessage: string;
  constructor(queue: string, remoteMessage: string) {
    super('ERR_STRATUS_REMOTE_ERROR', `The handler of queue "${queue}" failed: ${remoteMessage}`);
    this.remoteMessage = remoteMessage;
  }
}

/** Header a reply carries when the responder failed for good. */
export const REPLY_ERROR_HEADER = 'stratus-reply-error';

export interface RequestReplyOptions {
  /** The queue replies come back to; default `replies.<random>`, created now and deleted on close. */
  replyQueue?: string;
  /** Default timeout of a request; default 30 s. */
  timeoutMs?: number;
  /** Settings of the reply queue when this client creates it; replies expire after 5 min by default. */
  queue?: QueueOptions;
}

interface Pending {
  readonly queue: string;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  readonly timer: TimerHandle;
}

/**
 * Asynchronous Request-Reply over queues: a request carries `replyTo` (this client's reply queue) and a
 * correlation id; the responder sends its answer there with the same correlation id; the requester matches it and
 * gives up after a timeout (a late reply is dropped).
 */
export class RequestReplyClient {
  readonly messaging: Messaging;
  readonly replyQueue: string;
  readonly #timeoutMs: number;
  readonly #ownsQueue: boolean;
  readonly #queueOptions: QueueOptions;
  readonly #pending = new Map<string, Pending>();
  #consumer: Consumer<unknown> | undefined;

  constructor(messaging: Messaging, options: RequestReplyOptions = {}) {
    const timeoutMs = options.timeoutMs ?? 30_000;
    assertDuration('timeoutMs', timeoutMs, { allowZero: false });
    if (options.replyQueue !== undefined) assertQueueName(options.replyQueue, 'replyQueue');
    this.messaging = messaging;
    this.replyQueue = options.replyQueue ?? `replies.${randomId()}`;
    this.#ownsQueue = options.replyQueue === undefined;
    this.#timeoutMs = timeoutMs;
    this.#queueOptions = { defaultTtlMs: 5 * 60_000, duplicateWindowMs: 0, ...options.queue };
  }

  /** Creates the reply queue when this client owns it and starts listening for replies. */
  async start(): Promise<this> {
    if (this.#consumer !== undefined) return this;
    if (this.#ownsQueue || (await this.messaging.getQueue(this.replyQueue)) === undefined) {
      await this.messaging.createQueue(this.replyQueue, this.#queueOptions);
    }
    this.#consumer = this.messaging.consume(this.replyQueue, (message) => this.#settle(message), {
      concurrency: 16,
      prefetch: 16,
    });
    return this;
  }

  /** Sends `body` to `queue` and resolves with the reply's body. */
  async request<Res = unknown, Req = unknown>(
    queue: string,
    body: Req,
    options: SendOptions & { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<Res> {
    if (this.#consumer === undefined) throw new InvalidOptionsError('start', 'call start() before request()');
    const { timeoutMs = this.#timeoutMs, signal, ...sendOptions } = options;
    assertDuration('timeoutMs', timeoutMs, { allowZero: false });
    if (signal?.aborted) throw new OperationCancelledError(signal.reason);
    const correlationId = sendOptions.correlationId ?? uuidv7();
    const { clock } = this.messaging;
    const reply = new Promise<Res>((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        this.#pending.delete(correlationId);
        reject(new RequestTimeoutError(queue, correlationId, timeoutMs));
      }, timeoutMs);
      this.#pending.set(correlationId, {
        queue,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer,
      });
      signal?.addEventListener(
        'abort',
        () => {
          if (this.#pending.delete(correlationId)) {
            clock.clearTimeout(timer);
            reject(new OperationCancelledError(signal.reason));
          }
        },
        { once: true },
      );
    });
    try {
      // The request expires with its wait: nobody would read a reply to it after that.
      await this.messaging
        .queue<Req>(queue)
        .send(body, { ttlMs: timeoutMs, ...sendOptions, correlationId, replyTo: this.replyQueue });
    } catch (error) {
      const pending = this.#pending.get(correlationId);
      if (pending !== undefined) {
        this.#pending.delete(correlationId);
        clock.clearTimeout(pending.timer);
      }
      throw error;
    }
    return reply;
  }

  /** Requests waiting for their reply. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Stops listening, fails waiting requests, and deletes the reply queue when this client created it. */
  async close(): Promise<void> {
    await this.#consumer?.close();
    this.#consumer = undefined;
    for (const [correlationId, pending] of this.#pending) {
      this.messaging.clock.clearTimeout(pending.timer);
      pending.reject(new RequestTimeoutError(pending.queue, correlationId, 0));
    }
    this.#pending.clear();
    if (this.#ownsQueue) await this.messaging.deleteQueue(this.replyQueue);
  }

  #settle(message: ReceivedMessage<unknown>): void {
    const correlationId = message.correlationId;
    const pending = correlationId === undefined ? undefined : this.#pending.get(correlationId);
    if (pending === undefined) return; // late or foreign: completing drops it
    this.#pending.delete(correlationId as string);
    this.messaging.clock.clearTimeout(pending.timer);
    const remoteError = message.headers[REPLY_ERROR_HEADER];
    if (remoteError !== undefined) pending.reject(new RemoteRequestError(pending.queue, remoteError));
    else pending.resolve(message.body);
  }
}

/**
 * Wraps a request handler: its result is sent to the request's `replyTo` with the request's correlation id. When
 * the handler throws on the message's last delivery, the requester gets a RemoteRequestError instead of waiting
 * for its timeout. Requests without `replyTo` are handled without a reply.
 */
export function respond<Req, Res>(
  messaging: Messaging,
  handler: (body: Req, message: ReceivedMessage<Req>, context: HandlerContext) => Res | Promise<Res>,
): MessageHandler<Req> {
  return async (message, context) => {
    const replyTo = message.replyTo;
    const correlationId = message.correlationId ?? message.id;
    let result: Res;
    try {
      result = await handler(message.body, message, context);
    } catch (error) {
      const settings = await messaging.settingsOf(message.queue);
      if (replyTo !== undefined && message.deliveryCount >= settings.maxDeliveryCount) {
        await messaging.queue(replyTo).send(null, {
          id: `${message.id}:reply`,
          correlationId,
          headers: { [REPLY_ERROR_HEADER]: error instanceof Error ? error.message : String(error) },
        });
      }
      throw error;
    }
    if (replyTo !== undefined) {
      // A deterministic id: a handler re-run after a crash sends the same reply, which the reply queue's duplicate
      // detection drops (and the requester ignores, no longer waiting for it).
      await messaging.queue(replyTo).send(result, { id: `${message.id}:reply`, correlationId });
    }
  };
}
