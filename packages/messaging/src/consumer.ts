import {
  assertDuration,
  assertInteger,
  InvalidOptionsError,
  StoreFailures,
  StratusError,
  sleep,
} from '@stratus/core';
import type { RateLimiter } from '@stratus/resilience';
import { type ConsumerEventSink, consumerEventSink, settleFailure } from './consumer-events.js';
import { type ConsumerOptions, type ConsumerSettings, consumerSettings } from './consumer-options.js';
import { MessageLockLostError, PoisonMessageError } from './errors.js';
import type { ConsumerEvent } from './events.js';
import { HeldJobs } from './held-jobs.js';
import type { Job } from './job.js';
import { LockRenewal } from './lock-renewal.js';
import type { MessageHandler, SessionContext } from './message-handler.js';
import type { QueueClient } from './queue-client.js';
import type { ReceivedMessage } from './received-message.js';
import { retryOrDeadLetter } from './retry-or-dead-letter.js';
import { dueIn, WakeUp } from './wake-up.js';

/** Why a handler's signal aborted at shutdown. */
export class ConsumerClosedError extends StratusError {
  constructor(queue: string) {
    super(
      'ERR_STRATUS_CONSUMER_CLOSED',
      `The consumer of queue "${queue}" shut down before the handler finished`,
    );
  }
}

interface ReceiveSettings {
  readonly lockMs: number;
  /** Set where the queue, the backend and the options make session batches. */
  readonly sessionBatch: number | undefined;
}

/** Competing Consumers for one queue in this process. Create through `Messaging.consume`. */
export class Consumer<T> {
  readonly queue: QueueClient<T>;
  /**
   * Resolves when the consumer has stopped (after close); rejects with PoisonMessageError when it stopped by itself
   * on a poison message (`onPoison: 'stop'`).
   */
  readonly stopped: Promise<void>;
  readonly #handler: MessageHandler<T>;
  readonly #event: ConsumerEventSink;
  readonly #options: ConsumerSettings;
  /** Received and not yet finished: waiting for a slot (running false) or running. */
  readonly #held = new HeldJobs();
  readonly #renewal: LockRenewal | undefined;
  /** Signalled by the backend's watch and by every freed slot or settled completion. */
  readonly #wakeUp = new WakeUp();
  #running = 0;
  #closing = false;
  #closed: Promise<void> | undefined;
  #pumping = false;
  #processed = 0;
  #resolveStopped: () => void = () => {};
  #rejectStopped: (error: PoisonMessageError) => void = () => {};
  /** Set when `onPoison: 'stop'` stopped the consumer. */
  #poison: PoisonMessageError | undefined;
  #loop: Promise<void> | undefined;
  readonly #closeSignal = new AbortController();
  readonly #jobDoneListeners = new Set<() => void>();
  /** Completions submitted and not yet acknowledged. */
  readonly #settling = new Set<Promise<void>>();
  #releasedWhileClosing = 0;
  /** Slots promised to receives in flight (the loop's, and completions that receive). */
  #reserved = 0;
  /** Whether the backend completes and receives in one round trip (see #finish). */
  readonly #continues: boolean;

  constructor(
    queue: QueueClient<T>,
    handler: MessageHandler<T>,
    options: ConsumerOptions,
    emit: (event: ConsumerEvent) => void,
  ) {
    if (typeof handler !== 'function') throw new InvalidOptionsError('handler', 'expected a function');
    this.#options = consumerSettings(queue.name, options);
    this.queue = queue;
    this.#continues = queue.messaging.backend.completeAndReceive !== undefined;
    this.#handler = handler;
    this.#event = consumerEventSink(queue, emit);
    this.#renewal = this.#options.autoRenew
      ? new LockRenewal(queue, this.#held, this.#options.maxRenewMs, () => this.#closing, this.#event)
      : undefined;
    this.stopped = new Promise((resolve, reject) => {
      this.#resolveStopped = resolve;
      this.#rejectStopped = reject;
    });
    // Whoever awaits `stopped` sees the rejection; nobody awaiting it is no reason to crash the process.
    this.stopped.catch(() => {});
  }

  /** Handlers running now. */
  get running(): number {
    return this.#running;
  }
  /** Messages this consumer finished (completed, dead-lettered or abandoned after a failure). */
  get processed(): number {
    return this.#processed;
  }
  get closing(): boolean {
    return this.#closing;
  }

  /** @internal Called by Messaging.consume. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Graceful shutdown: stops receiving, gives prefetched messages back, lets running handlers finish for up to
   * `timeoutMs`, then aborts the rest (their signal fires) and gives their messages back too.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.#closed ??= this.#shutdown(options.timeoutMs ?? this.#options.shutdownTimeoutMs);
    return this.#closed;
  }

  async #run(): Promise<void> {
    const { messaging, name } = this.queue;
    const unwatch = messaging.backend.watch(name, () => this.#wakeUp.signal());
    const failures = new StoreFailures();
    try {
      while (!this.#closing) {
        const window = this.#options.concurrency + this.#options.prefetch;
        // Completions in flight may overlap one more window of receives, not more: a slow backend slows us down.
        const capacity = this.#settling.size >= window ? 0 : window - this.#held.size - this.#reserved;
        if (capacity <= 0) {
          await this.#idle(Number.POSITIVE_INFINITY, false);
          continue;
        }
        let receiving: ReceiveSettings;
        let result: Awaited<ReturnType<typeof messaging.backend.receive>>;
        let accepted: ReceivedMessage<T>[];
        try {
          // Inside the try: an unreachable backend or a queue not created yet is retried, never fatal.
          receiving = await this.#receiveSettings();
          this.#wakeUp.reset();
          this.#reserved += capacity;
          try {
            result = await messaging.backend.receive(name, {
              max: capacity,
              lockMs: receiving.lockMs,
              now: messaging.clock.now(),
              sessionBatch: receiving.sessionBatch,
            });
            accepted = result.messages.length === 0 ? [] : await this.queue.accept(result.messages);
          } finally {
            this.#reserved -= capacity;
          }
          failures.succeeded();
        } catch (error) {
          const retryInMs = failures.failed();
          this.#event({ type: 'receive-failed', error, retryInMs });
          await this.#idle(retryInMs, false);
          continue;
        }
        if (result.messages.length === 0) {
          await this.#idle(
            Math.min(this.#options.idlePollMs, dueIn(messaging.clock, result.nextDueAt)),
            true,
          );
          continue;
        }
        this.#take(accepted, receiving);
      }
    } finally {
      unwatch();
    }
  }

  async #receiveSettings(): Promise<ReceiveSettings> {
    const settings = await this.#settings();
    const { sessionBatch, lockMs } = this.#options;
    const batches = sessionBatch > 1 && settings.sessions && this.queue.messaging.backend.sessionBatches;
    return {
      lockMs: lockMs ?? settings.lockDurationMs,
      sessionBatch: batches === true ? sessionBatch : undefined,
    };
  }

  /** Holds received messages and starts them as slots allow; a session batch runs in order in one slot. */
  #take(messages: readonly ReceivedMessage<T>[], { lockMs, sessionBatch }: ReceiveSettings): void {
    this.#held.hold(messages, sessionBatch !== undefined, this.queue.messaging.clock.monotonic());
    this.#renewal?.arm(lockMs);
    void this.#pump();
  }

  /** Starts buffered messages while slots are free, through the rate limiter when there is one. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#closing && this.#running < this.#options.concurrency && this.#held.waiting > 0) {
        // Without a rate limiter, jobs start in this turn.
        if (this.#options.rateLimit !== undefined && !(await this.#admit())) break;
        const job = this.#held.nextWaiting();
        if (job === undefined) break;
        if (!this.#held.has(job)) continue; // its lock was lost while it waited
        job.running = true;
        this.#running++;
        void this.#process(job);
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Waits for the rate limiter's permit; false when the consumer closes first. */
  async #admit(): Promise<boolean> {
    const { rateLimitKey, idlePollMs } = this.#options;
    const limiter = this.#options.rateLimit as RateLimiter;
    while (!this.#closing) {
      const permit = await limiter.acquire(rateLimitKey);
      if (permit.allowed) return !this.#closing;
      const waitMs = Number.isFinite(permit.retryAfterMs) ? Math.max(1, permit.retryAfterMs) : idlePollMs;
      await sleep(this.queue.messaging.clock, waitMs, this.#closeSignal.signal).catch(() => {});
    }
    return false;
  }

  /** Runs a message, then the rest of its session batch in order, in one slot. */
  async #process(first: Job): Promise<void> {
    try {
      for (let job: Job | undefined = first; job !== undefined; ) job = await this.#processOne(job);
    } finally {
      this.#running--;
      for (const listener of this.#jobDoneListeners) listener();
      this.#wakeUp.signal();
      void this.#pump();
    }
  }

  /** Runs one message's handler and settles it; resolves with the next message of its batch to run, if any. */
  async #processOne(job: Job): Promise<Job | undefined> {
    const { message } = job;
    let next = job.next;
    const started = this.queue.messaging.clock.monotonic();
    // Collected only for a handler that looks: most messages have no batch behind them.
    let following: Job[] | undefined;
    const followingJobs = () => {
      if (following === undefined) {
        following = [];
        for (let later = job.next; later !== undefined && this.#runnable(later); later = later.next)
          following.push(later);
      }
      return following;
    };
    let taken: Job[] = [];
    try {
      await this.#handler(message as ReceivedMessage<T>, {
        get signal() {
          return job.signal;
        },
        session: message.sessionId === undefined ? undefined : this.#session(message),
        get following() {
          return followingJobs().map((later) => later.message);
        },
        take(count: number) {
          const jobs = followingJobs();
          assertInteger('count', count, 0, jobs.length - taken.length);
          taken = jobs.slice(0, taken.length + count);
        },
      });
      if (taken.length > 0) {
        next = (taken[taken.length - 1] as Job).next;
        if (!message.settled) this.#settle(message.complete(), message, started);
        this.#completeTaken(taken, started);
      } else if (!message.settled && next !== undefined && this.#runnable(next))
        // The completion and the next message's work go out together (one group commit on SQLite).
        this.#settle(message.complete(), message, started);
      else if (!message.settled) this.#finish(job, started);
    } catch (error) {
      await this.#failed(job, error);
    } finally {
      this.#held.delete(job);
      this.#processed++;
    }
    if (next === undefined || this.#closing) return undefined; // shutdown gives the rest back
    // Abandoned (or its lock lost), or dead-lettered holding its session, the message took the rest of its batch
    // back to the queue with it.
    const settlement = message.settlement;
    if (settlement !== 'completed' && (settlement !== 'dead-lettered' || message.holdsSession))
      return this.#drop(next);
    if (!this.#runnable(next)) return this.#drop(next);
    if (this.#options.rateLimit !== undefined && !(await this.#admit())) return undefined;
    next.running = true;
    return next;
  }

  /** Completes what a handler took from its batch, in order, after its own message (one group commit on SQLite). */
  #completeTaken(taken: readonly Job[], started: number): void {
    for (const job of taken) {
      if (!job.message.settled) this.#settle(job.message.complete(), job.message, started);
      this.#held.delete(job);
      this.#processed++;
    }
  }

  #runnable(job: Job): boolean {
    return !this.#closing && this.#held.has(job) && !job.aborted;
  }

  /** Forgets the rest of a session batch, which the queue already took back. */
  #drop(from: Job): undefined {
    this.#held.dropFrom(from);
    return undefined;
  }

  /**
   * Completes a handled message in the background: its slot is free at once. Where the backend completes and
   * receives in one round trip, the completion also asks for messages to fill the free slots: on a sessions queue
   * the session's next message comes back with it, instead of after a wake-up and a receive of its own. Otherwise
   * completions of many handlers share round trips through the queue client's group commit.
   */
  #finish(job: Job, started: number): void {
    const { message } = job;
    // The finishing job still counts in #held: its slot is among the free ones.
    const free = this.#options.concurrency + this.#options.prefetch - (this.#held.size - 1) - this.#reserved;
    // Outside sessions, while other messages are held, their completions will share the group commit (one
    // transaction for many) and the receive loop fills the slots in bulk: receiving here would cost a transaction
    // per message. The last message held has nobody to share with, and its slot refills a round trip sooner.
    const shareable = message.sessionId === undefined && this.#held.size > 1;
    if (!this.#continues || this.#closing || free <= 0 || shareable) {
      this.#settle(message.complete(), message, started);
      return;
    }
    this.#reserved += free;
    const continued = this.#receiveSettings().then(async (receiving) => {
      try {
        const received = await message.completeAndReceive({ max: free, ...receiving });
        // Received while closing: given back at once (a session's last first), and counted with the messages
        // shutdown released.
        if (this.#closing) {
          for (const next of received.reverse()) if (await this.#release(next)) this.#releasedWhileClosing++;
        } else this.#take(received as ReceivedMessage<T>[], receiving);
      } finally {
        this.#reserved -= free;
      }
    });
    this.#settle(continued, message, started);
  }

  #settle(settled: Promise<void>, message: ReceivedMessage<unknown>, started: number): void {
    const settling = settled.then(
      () =>
        this.#event({
          type: 'message-completed',
          messageId: message.id,
          deliveryCount: message.deliveryCount,
          durationMs: this.queue.messaging.clock.monotonic() - started,
        }),
      (error: unknown) => this.#event(settleFailure('complete', message.id, error)),
    );
    this.#settling.add(settling);
    void settling.finally(() => {
      this.#settling.delete(settling);
      this.#wakeUp.signal();
    });
  }

  async #failed(job: Job, error: unknown): Promise<void> {
    const { message } = job;
    if (error instanceof MessageLockLostError) {
      this.#event({ type: 'lock-lost', messageId: message.id });
      return;
    }
    // Shutdown already gave this message back; a handler that settled it itself owns that outcome.
    if (message.settled || (this.#closing && job.aborted)) return;
    const deadLettered = await retryOrDeadLetter(
      this.queue,
      message,
      error,
      this.#options.retryBackoff,
      this.#event,
    );
    if (deadLettered && this.#options.onPoison === 'stop' && this.#poison === undefined) {
      this.#poison = new PoisonMessageError(this.queue.name, message, error);
      // Not awaited: the shutdown waits for this handler's slot, which is freed once this returns.
      void this.close();
    }
  }

  #session(message: ReceivedMessage<unknown>): SessionContext | undefined {
    const id = message.sessionId;
    if (id === undefined) return undefined;
    const queue = this.queue;
    return {
      id,
      getState: <S>() => queue.getSessionState<S>(id),
      setState: (state: unknown) => queue.setSessionState(id, state),
    };
  }

  async #settings() {
    return this.queue.messaging.settingsOf(this.queue.name);
  }

  /** Waits for a wake-up (a free slot, a backend signal, close) or `ms`; one that came already counts if `onSignal`. */
  #idle(ms: number, onSignal: boolean): Promise<void> {
    if (this.#closing) return Promise.resolve();
    if (!onSignal) this.#wakeUp.reset();
    return this.#wakeUp.wait(this.queue.messaging.clock, ms);
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    assertDuration('timeoutMs', timeoutMs);
    const { messaging, name } = this.queue;
    this.#closing = true;
    this.#closeSignal.abort();
    this.#wakeUp.signal();
    await this.#loop;
    let released = 0;
    const waiting = this.#held.takeWaiting();
    // A session's messages go back last first, so none is ever available before the one ahead of it.
    for (const job of waiting.reverse()) {
      if (!this.#held.delete(job)) continue;
      if (await this.#release(job.message)) released++;
    }
    const runningAtClose = this.#running;
    if (this.#running > 0) {
      await new Promise<void>((resolve) => {
        const timer = messaging.clock.setTimeout(finish, timeoutMs);
        const poll = () => (this.#running === 0 ? finish() : undefined);
        const stopWaiting = this.#onJobDone(poll);
        function finish() {
          messaging.clock.clearTimeout(timer);
          stopWaiting();
          resolve();
        }
        poll();
      });
    }
    const stragglers = [...this.#held];
    for (const job of stragglers.reverse()) {
      job.abort(new ConsumerClosedError(name));
      if (await this.#release(job.message)) released++;
    }
    await Promise.all(this.#settling);
    released += this.#releasedWhileClosing;
    this.#renewal?.stop();
    const stillRunning = stragglers.filter((job) => job.running).length;
    const poison = this.#poison;
    this.#event({
      type: 'consumer-stopped',
      drained: runningAtClose - stillRunning,
      released,
      ...(poison === undefined ? {} : { error: poison }),
    });
    if (poison === undefined) this.#resolveStopped();
    else this.#rejectStopped(poison);
  }

  /** Gives a message back without penalty beyond the delivery it already counted. */
  async #release(message: ReceivedMessage<unknown>): Promise<boolean> {
    if (message.settled) return false;
    try {
      await message.abandon();
      return true;
    } catch (error) {
      this.#event(settleFailure('abandon', message.id, error));
      return false;
    }
  }

  #onJobDone(listener: () => void): () => void {
    this.#jobDoneListeners.add(listener);
    return () => this.#jobDoneListeners.delete(listener);
  }
}
