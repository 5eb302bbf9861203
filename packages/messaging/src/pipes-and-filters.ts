import { createHash } from 'node:crypto';
import { InvalidOptionsError } from '@stratus/core';
import type { Consumer } from './consumer.js';
import type { ConsumerOptions } from './consumer-options.js';
import type { HandlerContext } from './message-handler.js';
import type { Messaging } from './messaging.js';
import { assertQueueName, type QueueOptions } from './options.js';
import type { ReceivedMessage } from './received-message.js';

/** Each filter marks the messages it produced with this header prefix plus its name (value 'complete'). */
export const FILTER_MARK_PREFIX = 'stratus-filter.';

export interface FilterStep<I = unknown, O = unknown> {
  /** Names the step: it is part of the ids of the messages it produces and of its mark header. */
  readonly name: string;
  /** The queue it consumes. */
  readonly input: string;
  /** The queue it produces to; none for the final receiver. */
  readonly output?: string;
  /** The filter's one task. Returning undefined produces nothing (the message ends here). */
  readonly transform: (
    body: I,
    message: ReceivedMessage<I>,
    context: HandlerContext,
  ) => O | undefined | Promise<O | undefined>;
}

/**
 * The id of what `step` produces from input message `inputId`: the same every time, so when a filter runs twice for
 * one input (it crashed after sending, before completing) the output queue's duplicate detection drops the copy.
 */
export function filterOutputId(step: string, inputId: string): string {
  return createHash('sha256').update(step).update('\0').update(inputId).digest('base64url');
}

/**
 * Runs one filter as a competing consumer of its input queue, in this process; run as many instances (in as many
 * processes) as the step needs. A failing transform is retried alone, with the consumer's backoff, and the input
 * message is completed only after the output was stored.
 */
export function startFilter<I, O>(
  messaging: Messaging,
  step: FilterStep<I, O>,
  options: ConsumerOptions = {},
): Consumer<I> {
  assertStep(step);
  return messaging.consume<I>(
    step.input,
    async (message, context) => {
      const result = await step.transform(message.body, message, context);
      if (result === undefined || step.output === undefined) return;
      await messaging.queue<O>(step.output).send(result, {
        id: filterOutputId(step.name, message.id),
        correlationId: message.correlationId ?? message.id,
        subject: message.subject,
        sessionId: message.sessionId,
        priority: message.priority,
        headers: { ...message.headers, [`${FILTER_MARK_PREFIX}${step.name}`]: 'complete' },
      });
    },
    options,
  );
}

function assertStep(step: FilterStep<never, unknown>): void {
  if (typeof step !== 'object' || step === null)
    throw new InvalidOptionsError('step', 'expected a filter step');
  if (typeof step.name !== 'string' || !/^[A-Za-z0-9_.-]{1,100}$/.test(step.name)) {
    throw new InvalidOptionsError('step.name', 'expected 1-100 letters, digits, _ . -');
  }
  assertQueueName(step.input, 'step.input');
  if (step.output !== undefined) assertQueueName(step.output, 'step.output');
  if (typeof step.transform !== 'function')
    throw new InvalidOptionsError('step.transform', 'expected a function');
}

/**
 * A chain of filters wired queue to queue: step i consumes `<name>.<step i>` and produces to the next step's
 * queue. Reorder, add or remove steps by changing the list; each step can still run in its own processes
 * (`startStep`) and scale on its own.
 */
export class Pipeline {
  readonly messaging: Messaging;
  readonly name: string;
  readonly steps: readonly FilterStep[];

  constructor(messaging: Messaging, name: string, steps: readonly Pick<FilterStep, 'name' | 'transform'>[]) {
    assertQueueName(name, 'name');
    if (!Array.isArray(steps) || steps.length === 0)
      throw new InvalidOptionsError('steps', 'expected at least one step');
    if (new Set(steps.map((step) => step.name)).size !== steps.length) {
      throw new InvalidOptionsError('steps', 'step names must be unique');
    }
    this.messaging = messaging;
    this.name = name;
    this.steps = steps.map((step, i) => {
      const next = steps[i + 1];
      const wired: FilterStep = {
        name: step.name,
        input: `${name}.${step.name}`,
        output: next === undefined ? undefined : `${name}.${next.name}`,
        transform: step.transform,
      };
      assertStep(wired);
      return wired;
    });
  }

  /** The queue the pipeline starts with. */
  get input(): string {
    return (this.steps[0] as FilterStep).input;
  }

  async createQueues(options: QueueOptions = {}): Promise<void> {
    for (const step of this.steps) await this.messaging.createQueue(step.input, options);
  }

  /** Runs one step here (with its own consumer options: concurrency, prefetch...). */
  startStep(name: string, options: ConsumerOptions = {}): Consumer<unknown> {
    const step = this.steps.find((candidate) => candidate.name === name);
    if (step === undefined)
      throw new InvalidOptionsError('name', `no step named "${name}" in pipeline "${this.name}"`);
    return startFilter(this.messaging, step, options);
  }

  /** Runs every step here; handy in development and tests. */
  startAll(options: Readonly<Record<string, ConsumerOptions>> = {}): Consumer<unknown>[] {
    return this.steps.map((step) => startFilter(this.messaging, step, options[step.name] ?? {}));
  }
}
