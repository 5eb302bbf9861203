import { InvalidOptionsError } from '@stratus/core';
import type { Messaging } from '@stratus/messaging';
import { CommandBus, type CommandEnvelope } from '../command-bus.js';

/**
 * Sends a process's commands. Called after the decision is stored, possibly again for the same command after a
 * crash: receivers recognise a resend by its id (queues detect the duplicate message id).
 */
export interface CommandSender {
  send(command: CommandEnvelope): Promise<unknown>;
}

/** Sends through a CommandBus: local handlers run in process, other commands go to their queue with the command id. */
export function commandBusSender(bus: CommandBus): CommandSender {
  if (!(bus instanceof CommandBus)) throw new InvalidOptionsError('bus', 'expected a CommandBus');
  return {
    send: (command) =>
      bus.send(command.type, command.data, {
        id: command.id,
        ...(command.correlationId === undefined ? {} : { correlationId: command.correlationId }),
        ...(command.expiresAt === undefined ? {} : { expiresAt: command.expiresAt }),
      }),
  };
}

/** The message a timeout travels as; it names its process so the router can bring it back. */
export interface TimeoutMessage {
  readonly processName: string;
  readonly processId: string;
  /** Deterministic: the message id, and the id of the event the process handles when it falls due. */
  readonly timeoutId: string;
  readonly type: string;
  readonly data: unknown;
  /** Epoch ms. */
  readonly dueAt: number;
}

/** Delivers a timeout message back at (or after) its due time, at least once. */
export interface TimeoutScheduler {
  schedule(timeout: TimeoutMessage): Promise<unknown>;
}

/**
 * Timeouts as scheduled messages on a queue (delivered no sooner than `dueAt` on the messaging clock, duplicates
 * dropped by message id). Consume the queue with ProcessRouter.consumeTimeouts.
 */
export function queueTimeoutScheduler(messaging: Messaging, queue: string): TimeoutScheduler {
  if (typeof messaging !== 'object' || messaging === null || typeof messaging.queue !== 'function') {
    throw new InvalidOptionsError('messaging', 'expected a Messaging instance');
  }
  const client = messaging.queue<TimeoutMessage>(queue);
  return {
    schedule: (timeout) =>
      client.send(timeout, {
        id: timeout.timeoutId,
        deliverAt: timeout.dueAt,
        subject: timeout.type,
        correlationId: timeout.processId,
      }),
  };
}
