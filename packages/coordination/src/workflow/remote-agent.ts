/**
 * A remote Agent: serves the `agent` steps of workflows on a queue (asynchronous request/reply over messaging). It
 * honours Complete By as the catalogue asks: a request whose deadline has passed (a redelivery after a crash, a
 * slow queue) is dropped without a word, a handler still running at the deadline is aborted, and nothing is sent
 * back after it, not even an error. A handler's error is answered as an error response, which the Scheduler
 * records as a failed step for the Supervisor to retry.
 */
import { assertFunction, assertObject, type Clock, InvalidOptionsError } from '@stratus/core';
import {
  type Consumer,
  type ConsumerOptions,
  type Messaging,
  REPLY_ERROR_HEADER,
  type ReceivedMessage,
} from '@stratus/messaging';
import type { WorkflowStepContext } from './definition.js';
import { StepDeadlineError } from './errors.js';

/** What the Scheduler sends: the step context without its signal. */
export interface AgentRequest {
  readonly workflowId: string;
  readonly step: string;
  readonly input: unknown;
  readonly results: Readonly<Record<string, unknown>>;
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly failures: number;
  readonly completeBy: number;
}

export type AgentHandler = (context: WorkflowStepContext) => unknown;

export interface RemoteAgentOptions {
  readonly messaging: Messaging;
  /** The queue the steps' `agent` names; created if missing. */
  readonly queue: string;
  /** Runs one step: its result is the reply. Use `context.idempotencyKey` so a rerun has no second effect. */
  readonly handler: AgentHandler;
  /** Default the messaging's clock. */
  readonly clock?: Clock;
  readonly consumer?: ConsumerOptions;
}

export class RemoteAgent {
  readonly queue: string;
  readonly #messaging: Messaging;
  readonly #handler: AgentHandler;
  readonly #clock: Clock;
  readonly #consumerOptions: ConsumerOptions;
  #consumer: Consumer<AgentRequest> | undefined;
  /** Requests dropped because their Complete By had passed (before or while they ran). */
  dropped = 0;

  constructor(options: RemoteAgentOptions) {
    assertObject('options', options as unknown);
    const { messaging, queue, handler, clock, consumer = { concurrency: 32, prefetch: 32 } } = options;
    if (typeof (messaging as Partial<Messaging> | undefined)?.consume !== 'function') {
      throw new InvalidOptionsError('messaging', 'expected a Messaging');
    }
    if (typeof queue !== 'string' || queue === '')
      throw new InvalidOptionsError('queue', 'expected a queue name');
    assertFunction('handler', handler);
    this.#messaging = messaging;
    this.queue = queue;
    this.#handler = handler;
    this.#clock = clock ?? messaging.clock;
    this.#consumerOptions = consumer;
  }

  async start(): Promise<this> {
    if (this.#consumer !== undefined) return this;
    if ((await this.#messaging.getQueue(this.queue)) === undefined)
      await this.#messaging.createQueue(this.queue);
    this.#consumer = this.#messaging.consume<AgentRequest>(
      this.queue,
      (message) => this.#serve(message),
      this.#consumerOptions,
    );
    return this;
  }

  async close(): Promise<void> {
    await this.#consumer?.close();
    this.#consumer = undefined;
  }

  async #serve(message: ReceivedMessage<AgentRequest>): Promise<void> {
    const request = message.body;
    if (this.#clock.now() > request.completeBy) {
      this.dropped++;
      return;
    }
    const controller = new AbortController();
    const timer = this.#clock.setTimeout(
      () => controller.abort(new StepDeadlineError(request.workflowId, request.step, request.completeBy)),
      Math.max(0, request.completeBy - this.#clock.now()),
    );
    let reply: { body: unknown; headers?: Record<string, string> };
    try {
      const value = await this.#handler({ ...request, signal: controller.signal });
      reply = { body: value === undefined ? null : value };
    } catch (error) {
      reply = {
        body: null,
        headers: { [REPLY_ERROR_HEADER]: error instanceof Error ? error.message : String(error) },
      };
    } finally {
      this.#clock.clearTimeout(timer);
    }
    if (controller.signal.aborted || this.#clock.now() > request.completeBy) {
      this.dropped++;
      return;
    }
    if (message.replyTo === undefined) return;
    await this.#messaging.queue(message.replyTo).send(reply.body, {
      id: `${message.id}:reply`,
      correlationId: message.correlationId ?? message.id,
      ...(reply.headers === undefined ? {} : { headers: reply.headers }),
    });
  }
}
