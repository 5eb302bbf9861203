import { InvalidOptionsError } from '@stratus/core';
import type { SendOutcome } from './backend.js';
import type { Consumer } from './consumer.js';
import type { ConsumerOptions } from './consumer-options.js';
import type { MessageHandler } from './message-handler.js';
import type { Messaging } from './messaging.js';
import { assertPriority, assertQueueName, type QueueOptions } from './options.js';
import type { MessageToSend, SendOptions } from './outgoing.js';

/** One band of priorities with a queue and a consumer pool of its own. */
export interface PriorityLevel {
  readonly queue: string;
  /** Messages with this priority or more (and less than the next level's) go to this queue. */
  readonly minPriority: number;
}

/**
 * The Priority Queue pattern's multiple-queue form: each priority band has its own queue and its own consumer
 * pool, sized independently, so high-priority work gets more capacity while low-priority work still always
 * progresses (unlike a single strictly ordered queue, where low messages can starve).
 */
export class PriorityQueues<T> {
  readonly messaging: Messaging;
  /** Highest band first. */
  readonly levels: readonly PriorityLevel[];

  constructor(messaging: Messaging, levels: readonly PriorityLevel[]) {
    if (!Array.isArray(levels) || levels.length === 0)
      throw new InvalidOptionsError('levels', 'expected at least one level');
    levels.forEach((level, i) => {
      assertQueueName(level.queue, `levels[${i}].queue`);
      try {
        assertPriority(level.minPriority);
      } catch (error) {
        throw new InvalidOptionsError(`levels[${i}].minPriority`, (error as Error).message);
      }
    });
    const sorted = [...levels].sort((a, b) => b.minPriority - a.minPriority);
    if (sorted.at(-1)?.minPriority !== 0)
      throw new InvalidOptionsError('levels', 'the lowest level must start at priority 0');
    if (new Set(sorted.map((level) => level.minPriority)).size !== sorted.length) {
      throw new InvalidOptionsError('levels', 'two levels start at the same priority');
    }
    this.messaging = messaging;
    this.levels = sorted;
  }

  /** Creates (or updates) every level's queue with the same settings. */
  async createQueues(options: QueueOptions = {}): Promise<void> {
    for (const level of this.levels) await this.messaging.createQueue(level.queue, options);
  }

  /** The queue a message of `priority` goes to. */
  queueFor(priority = 0): string {
    assertPriority(priority);
    return (this.levels.find((level) => priority >= level.minPriority) as PriorityLevel).queue;
  }

  send(body: T, options: SendOptions = {}): Promise<SendOutcome> {
    return this.messaging.queue<T>(this.queueFor(options.priority)).send(body, options);
  }

  /** Sends each message to its band's queue; atomic per queue, not across queues. */
  async sendBatch(messages: readonly MessageToSend<T>[]): Promise<SendOutcome[]> {
    const byQueue = new Map<string, number[]>();
    messages.forEach((message, i) => {
      const queue = this.queueFor(message.priority);
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), i]);
    });
    const outcomes: SendOutcome[] = new Array(messages.length);
    for (const [queue, indexes] of byQueue) {
      const sent = await this.messaging
        .queue<T>(queue)
        .sendBatch(indexes.map((i) => messages[i] as MessageToSend<T>));
      indexes.forEach((index, j) => {
        outcomes[index] = sent[j] as SendOutcome;
      });
    }
    return outcomes;
  }

  /** One consumer pool per level; `options` per queue name (e.g. a concurrency of 2 on high and 1 on low). */
  consume(
    handler: MessageHandler<T>,
    options: Readonly<Record<string, ConsumerOptions>> = {},
  ): Consumer<T>[] {
    return this.levels.map((level) =>
      this.messaging.consume<T>(level.queue, handler, options[level.queue] ?? {}),
    );
  }
}
