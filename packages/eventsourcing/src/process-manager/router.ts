import { assertCount, InvalidOptionsError, type LaneWork, runInLanes } from '@stratus/core';
import type { Consumer, ConsumerOptions, Messaging } from '@stratus/messaging';
import type { RecordedEvent } from '../backend.js';
import type { EventStore } from '../event-store.js';
import type { Subscription, SubscriptionOptions } from '../subscription.js';
import type { ProcessEvent } from './definition.js';
import { UnknownProcessManagerError } from './errors.js';
import type { ProcessManager, ProcessResult } from './process-manager.js';
import type { TimeoutMessage } from './senders.js';

// biome-ignore lint/suspicious/noExplicitAny: a router holds managers of any state and event types.
type AnyProcessManager = ProcessManager<any, any>;

export type RouterSubscriptionOptions = Omit<SubscriptionOptions, 'handler' | 'handleBatch'> & {
  /** Names the checkpoint: the router resumes after the last event it routed. */
  readonly name: string;
  /**
   * Processes whose events are handled at once (default 1: one event at a time). Each process still sees its events
   * one by one in order; different processes do not wait for each other, so a round trip per step no longer bounds
   * the throughput of all of them.
   */
  readonly concurrency?: number;
};

/**
 * Feeds events to process managers: each event goes to every manager whose definition correlates it with a
 * process (a process is created only by its start events), and each timeout to the manager that scheduled it.
 * Events come from a checkpointed store subscription or from a queue (e.g. one an EventPublisher topic feeds);
 * timeouts from the queue a queueTimeoutScheduler sends to.
 */
export class ProcessRouter {
  readonly #managers = new Map<string, AnyProcessManager>();

  constructor(managers: readonly AnyProcessManager[]) {
    if (!Array.isArray(managers) || managers.length === 0)
      throw new InvalidOptionsError('managers', 'expected at least one process manager');
    for (const manager of managers) {
      if (typeof manager?.handle !== 'function' || typeof manager.name !== 'string')
        throw new InvalidOptionsError('managers', 'expected ProcessManager instances');
      if (this.#managers.has(manager.name))
        throw new InvalidOptionsError('managers', `two process managers are named "${manager.name}"`);
      this.#managers.set(manager.name, manager);
    }
  }

  /** Routes one event to every manager (in registration order); one result per manager. */
  async route(event: ProcessEvent): Promise<ProcessResult<unknown>[]> {
    const results: ProcessResult<unknown>[] = [];
    for (const manager of this.#managers.values()) results.push(await manager.handle(event));
    return results;
  }

  async deliverTimeout(timeout: TimeoutMessage): Promise<ProcessResult<unknown>> {
    const manager = this.#managers.get(timeout?.processName);
    if (manager === undefined) throw new UnknownProcessManagerError(String(timeout?.processName));
    return manager.deliverTimeout(timeout);
  }

  /**
   * Routes every event of the store, in order, from a named checkpoint. A failing event (e.g. its commands could
   * not be sent) is retried by the subscription; what was already handled is recognised as a duplicate then. One
   * that keeps failing is parked (see SubscriptionOptions.onPoison): only the processes it belongs to wait behind
   * it, since its ordering keys are its processes.
   */
  subscribe(store: EventStore, options: RouterSubscriptionOptions): Subscription {
    if (typeof options !== 'object' || options === null || typeof options.name !== 'string')
      throw new InvalidOptionsError('options.name', 'expected a checkpoint name');
    const { concurrency = 1, ...rest } = options;
    assertCount('concurrency', concurrency, 1);
    const subscription = {
      keysOf: (event: RecordedEvent) => this.#lanesOf(event).map(([lane]) => lane),
      ...rest,
    };
    if (concurrency === 1)
      return store.subscribe({ ...subscription, handler: async (event) => void (await this.route(event)) });
    return store.subscribe({
      ...subscription,
      handleBatch: (events) => this.#routeConcurrently(events, concurrency),
    });
  }

  /** The processes an event belongs to: a lane (manager and process id) and its manager for each. */
  #lanesOf(event: RecordedEvent): [string, AnyProcessManager][] {
    const lanes: [string, AnyProcessManager][] = [];
    for (const manager of this.#managers.values()) {
      const processId = manager.definition.correlate(event);
      if (processId !== undefined) lanes.push([`${manager.name}\u0000${processId}`, manager]);
    }
    return lanes;
  }

  /** Routes a batch: each process's events in order, up to `concurrency` processes at a time. */
  #routeConcurrently(events: readonly RecordedEvent[], concurrency: number): Promise<void> {
    const work: LaneWork[] = [];
    for (const event of events) {
      for (const [lane, manager] of this.#lanesOf(event))
        work.push({ lane, run: () => manager.handle(event) });
    }
    // Every lane is tried before the batch fails: the subscription retries it, and handled events are duplicates then.
    return runInLanes(work, concurrency);
  }

  /** Routes the events arriving on a queue (bodies are recorded events, as EventPublisher sends them). */
  consumeEvents(messaging: Messaging, queue: string, options?: ConsumerOptions): Consumer<RecordedEvent> {
    return messaging.consume<RecordedEvent>(
      queue,
      async (message) => void (await this.route(message.body)),
      options,
    );
  }

  /** Brings back the timeouts arriving on a queue (see queueTimeoutScheduler). */
  consumeTimeouts(messaging: Messaging, queue: string, options?: ConsumerOptions): Consumer<TimeoutMessage> {
    return messaging.consume<TimeoutMessage>(
      queue,
      async (message) => void (await this.deliverTimeout(message.body)),
      options,
    );
  }
}
