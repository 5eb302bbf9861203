import {
  assertFunction,
  type Clock,
  InvalidOptionsError,
  StratusError,
  systemClock,
  uuidv7,
} from '@stratus/core';
import type { Consumer, ConsumerOptions, Messaging } from '@stratus/messaging';

/** A command as it travels: the same shape in process and on a queue. */
export interface CommandEnvelope<Data = unknown> {
  readonly type: string;
  /** Unique; the duplicate-detection key on the queue and a natural idempotency key for handlers. */
  readonly id: string;
  readonly data: Data;
  readonly correlationId?: string;
  /** Epoch ms after which the command is dropped unhandled (on a queue: dead-lettered as expired). */
  readonly expiresAt?: number;
}

export type CommandHandler<Data = unknown> = (command: CommandEnvelope<Data>) => Promise<void> | void;

/**
 * Handles `commands[0]`, and may handle the commands queued after it too, in order (a session's backlog, with the
 * consumer's `sessionBatch`): resolves with how many it handled, at least 1. The rest are handled after.
 */
export type BatchCommandHandler = (commands: readonly CommandEnvelope[]) => Promise<number>;

export interface SendCommandOptions {
  /** Default a UUIDv7. */
  readonly id?: string;
  readonly correlationId?: string;
  /** Deliver after this delay (queued commands only; a local handler with a delay goes through the queue). */
  readonly delayMs?: number;
  /** Epoch ms after which the command must not run: not handled or queued once past, a queued one expires then. */
  readonly expiresAt?: number;
}

export interface CommandBusOptions {
  /** Where commands without a local handler go; without it such commands fail with NoCommandHandlerError. */
  readonly messaging?: Messaging;
  /** The queue of a command type; default 'commands' for all. */
  readonly queueOf?: (type: string) => string;
  /**
   * The session of a queued command, for a single writer per aggregate (the Journey serialises SeatsAvailability
   * commands per conference this way); default none.
   */
  readonly sessionOf?: (command: CommandEnvelope) => string | undefined;
  readonly clock?: Clock;
}

/** A command type with no local handler and no queue to send it to, or received with no handler for it. */
export class NoCommandHandlerError extends StratusError {
  readonly commandType: string;
  constructor(type: string) {
    super('ERR_STRATUS_NO_COMMAND_HANDLER', `No handler for command type "${type}"`);
    this.commandType = type;
  }
}

/**
 * The command bus of CQRS: a command is handled by exactly one handler. When the handler is registered in this
 * process the command runs synchronously, in process (the CQRS Journey V3's optimisation, with no queue round trip),
 * and its error reaches the sender; otherwise it is sent to a queue and handled asynchronously by a process that
 * consumes that queue with the same handler code. Unlike the Journey's decorator, a local failure does not fall back
 * to the queue: a handler that stored events and then threw would run twice.
 */
export class CommandBus {
  readonly #handlers = new Map<string, CommandHandler>();
  readonly #batchHandlers = new Map<string, BatchCommandHandler>();
  readonly #messaging: Messaging | undefined;
  readonly #queueOf: (type: string) => string;
  readonly #sessionOf: ((command: CommandEnvelope) => string | undefined) | undefined;
  readonly #clock: Clock;

  constructor(options: CommandBusOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidOptionsError('options', 'expected an object');
    const { messaging, queueOf = () => 'commands', sessionOf, clock = systemClock } = options;
    if (messaging !== undefined && (typeof messaging !== 'object' || typeof messaging.queue !== 'function')) {
      throw new InvalidOptionsError('messaging', 'expected a Messaging instance');
    }
    assertFunction('queueOf', queueOf);
    if (sessionOf !== undefined) assertFunction('sessionOf', sessionOf);
    this.#messaging = messaging;
    this.#queueOf = queueOf;
    this.#sessionOf = sessionOf;
    this.#clock = clock;
  }

  /** Registers the handler of a command type (one per type). */
  register<Data>(type: string, handler: CommandHandler<Data>): this {
    if (typeof type !== 'string' || type.length === 0)
      throw new InvalidOptionsError('type', 'expected a non-empty string');
    assertFunction('handler', handler);
    if (this.#handlers.has(type))
      throw new InvalidOptionsError('type', `a handler for "${type}" is already registered`);
    this.#handlers.set(type, handler as CommandHandler);
    return this;
  }

  /**
   * Registers one handler for several command types that it can handle in batches (see BatchCommandHandler); sent
   * in process, or alone on a queue, each command is a batch of one.
   */
  registerBatch(types: readonly string[], handler: BatchCommandHandler): this {
    if (!Array.isArray(types) || types.length === 0)
      throw new InvalidOptionsError('types', 'expected a non-empty array of command types');
    assertFunction('handler', handler);
    for (const type of types) {
      this.register(type, async (command) => {
        await handler([command]);
      });
      this.#batchHandlers.set(type, handler);
    }
    return this;
  }

  handles(type: string): boolean {
    return this.#handlers.has(type);
  }

  /**
   * Handles the command here when its handler is local (resolving when it is done, rejecting with its error), or
   * sends it to its queue (resolving once the queue holds it).
   */
  async send<Data>(
    type: string,
    data: Data,
    options: SendCommandOptions = {},
  ): Promise<'handled' | 'queued' | 'expired'> {
    if (typeof type !== 'string' || type.length === 0)
      throw new InvalidOptionsError('type', 'expected a non-empty string');
    const { expiresAt } = options;
    if (expiresAt !== undefined && !Number.isFinite(expiresAt))
      throw new InvalidOptionsError('expiresAt', 'expected epoch milliseconds');
    const now = this.#clock.now();
    if (expiresAt !== undefined && expiresAt <= now) return 'expired';
    const command: CommandEnvelope<Data> = {
      type,
      id: options.id ?? uuidv7(now),
      data,
      ...(options.correlationId === undefined ? {} : { correlationId: options.correlationId }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
    const local = this.#handlers.get(type);
    if (local !== undefined && options.delayMs === undefined) {
      await local(command);
      return 'handled';
    }
    const messaging = this.#messaging;
    if (messaging === undefined) throw new NoCommandHandlerError(type);
    const sessionId = this.#sessionOf?.(command);
    await messaging.queue<CommandEnvelope<Data>>(this.#queueOf(type)).send(command, {
      id: command.id,
      subject: type,
      ...(command.correlationId === undefined ? {} : { correlationId: command.correlationId }),
      ...(sessionId === undefined ? {} : { sessionId }),
      ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }),
      ...(expiresAt === undefined ? {} : { ttlMs: expiresAt - now }),
    });
    return 'queued';
  }

  /**
   * Handles the commands arriving on a queue with the registered handlers: a failing handler's command is retried
   * by the consumer (backoff, then the dead-letter queue); a command nobody handles is dead-lettered at once.
   */
  consume(queue: string, options: ConsumerOptions = {}): Consumer<CommandEnvelope> {
    const messaging = this.#messaging;
    if (messaging === undefined)
      throw new InvalidOptionsError('messaging', 'consuming commands needs messaging');
    return messaging.consume<CommandEnvelope>(
      queue,
      async (message, context) => {
        const command = message.body;
        const handler = typeof command?.type === 'string' ? this.#handlers.get(command.type) : undefined;
        if (handler === undefined) {
          await message.deadLetter(
            'no-handler',
            `No handler for command type ${JSON.stringify(command?.type)}`,
          );
          return;
        }
        // The queue expires it too, but a message already received (or a clock ahead of the sender's) must not run late.
        if (this.#expired(command)) {
          await message.deadLetter('expired', `Command ${command.type} expired before it was handled`);
          return;
        }
        const batchHandler = this.#batchHandlers.get(command.type);
        if (batchHandler === undefined) {
          await handler(command);
          return;
        }
        // The commands after it that the same handler takes, up to the first it does not (or that expired).
        const batch = [command];
        for (const later of context.following) {
          const next = later.body as CommandEnvelope | undefined;
          if (typeof next?.type !== 'string' || this.#batchHandlers.get(next.type) !== batchHandler) break;
          if (this.#expired(next)) break;
          batch.push(next);
        }
        const handled = await batchHandler(batch);
        if (!Number.isInteger(handled) || handled < 1 || handled > batch.length)
          throw new InvalidOptionsError(
            'handled',
            `a batch handler handled ${handled} of ${batch.length} commands`,
          );
        context.take(handled - 1);
      },
      options,
    );
  }
  #expired(command: CommandEnvelope): boolean {
    return command.expiresAt !== undefined && command.expiresAt <= this.#clock.now();
  }
}

/** Answers queries: kept apart from commands, with no side effects and one handler per query type. */
export class QueryBus {
  readonly #handlers = new Map<string, (query: unknown) => unknown>();

  register<Query, Result>(type: string, handler: (query: Query) => Result | Promise<Result>): this {
    if (typeof type !== 'string' || type.length === 0)
      throw new InvalidOptionsError('type', 'expected a non-empty string');
    assertFunction('handler', handler);
    if (this.#handlers.has(type))
      throw new InvalidOptionsError('type', `a handler for "${type}" is already registered`);
    this.#handlers.set(type, handler as (query: unknown) => unknown);
    return this;
  }

  async ask<Result = unknown>(type: string, query?: unknown): Promise<Result> {
    const handler = this.#handlers.get(type);
    if (handler === undefined) throw new NoQueryHandlerError(type);
    return (await handler(query)) as Result;
  }
}

export class NoQueryHandlerError extends StratusError {
  readonly queryType: string;
  constructor(type: string) {
    super('ERR_STRATUS_NO_QUERY_HANDLER', `No handler for query type "${type}"`);
    this.queryType = type;
  }
}
