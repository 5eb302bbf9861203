import {
  assertDuration,
  assertInteger,
  type Backoff,
  exponentialBackoff,
  InvalidOptionsError,
  StratusError,
  sleep,
  type TimerHandle,
} from '@stratus/core';
import type { RateLimiter } from '@stratus/resilience';
import { DEAD_LETTER_MAX_DELIVERIES } from './backend.js';
import { MessageLockLostError } from './errors.js';
import type { ConsumerEvent } from './events.js';
import { dueIn, type QueueClient } from './messaging.js';
import type { ReceivedMessage } from './received-message.js';

export interface SessionContext {
  readonly id: string;
  getState<S = unknown>(): Promise<S | undefined>;
  /** Undefined clears the state. */
  setState(state: unknown): Promise<void>;
}

export interface HandlerContext {
  /** Aborts when the message's lock is lost or the consumer's shutdown deadline passes. */
  readonly signal: AbortSignal;
  /** The message's session on a queue with sessions (this consumer holds it while the handler runs). */
  readonly session: SessionContext | undefined;
  /**
   * With `sessionBatch`, the messages of this one's batch that would run after it, in order (empty otherwise). A
   * handler that can do their work together with this message's, for less than one by one, does so and calls
   * `take`.
   */
  readonly following: readonly ReceivedMessage<unknown>[];
  /**
   * Says that this handler did the work of the first `count` messages of `following` too: they do not run, and
   * they complete with this message when the handler resolves (those the handler settled itself excepted). Call it
   * once that work is done: if the handler throws, this message is retried and the taken ones go back with it.
   */
  take(count: number): void;
}

/**
 * Processes one message. Resolve to have it completed (unless the handler settled it itself); throw to have it
 * abandoned and retried after a backoff, or dead-lettered once it used up the queue's deliveries.
 */
export type MessageHandler<T> = (
  message: ReceivedMessage<T>,
  context: HandlerContext,
) => Promise<void> | void;

export interface ConsumerOptions {
  /** Handlers running at once in this process; default 1. */
  concurrency?: number;
  /** Messages locked ahead of free handler slots, to hide the receive round trip; default 0. */
  prefetch?: number;
  /** Lock duration of each receive; default the queue's. */
  lockMs?: number;
  /** Renew locks of held messages before they expire; default true. */
  autoRenew?: boolean;
  /** Stop renewing a message's lock after this long (a handler stuck for good lets its message go); default 5 min. */
  maxRenewMs?: number;
  /** Delay before a failed message is delivered again, by delivery count; default exponential 1 s ×2 up to 60 s. */
  retryBackoff?: Backoff;
  /**
   * Queue-Based Load Leveling: a limiter from @stratus/resilience consulted before each handler starts, so a
   * backlog drains at the limiter's rate (a Redis or PostgreSQL store makes it one rate for all processes).
   */
  rateLimit?: RateLimiter;
  /** Key under which the rate limiter counts; default the queue name. */
  rateLimitKey?: string;
  /**
   * On a sessions queue, how many of a session's messages one receive may lock together; default 1. They run one
   * after another in one handler slot, in order, each completed as the next one starts, so a busy session costs one
   * round trip per message instead of two. Backends without session batches (PostgreSQL) lock one at a time.
   */
  sessionBatch?: number;
  /** Safety-net poll while idle, in case a wake-up signal was missed; default 5 s. */
  idlePollMs?: number;
  /** Default deadline of close(); default 30 s. */
  shutdownTimeoutMs?: number;
}

/** Why a handler's signal aborted at shutdown. */
export class ConsumerClosedError extends StratusError {
  constructor(queue: string) {
    super(
      'ERR_STRATUS_CONSUMER_CLOSED',
      `The consumer of queue "${queue}" shut down before the handler finished`,
    );
  }
}

/**
 * A held message. Its abort signal is created only if the handler reads it: most handlers never do, and an
 * AbortController per message is a measurable share of a no-op handler's cost.
 */
class Job {
  readonly message: ReceivedMessage<unknown>;
  readonly receivedAt: number;
  running = false;
  /** The next message of its session batch, run after this one in the same slot. */
  next: Job | undefined;
  #controller: AbortController | undefined;
  #abortReason: unknown;
  #aborted = false;

  constructor(message: ReceivedMessage<unknown>, receivedAt: number) {
    this.message = message;
    this.receivedAt = receivedAt;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}

interface ReceiveSettings {
  readonly lockMs: number;
  /** Set where the queue, the backend and the options make session batches. */
  readonly sessionBatch: number | undefined;
}

const RECEIVE_RETRY = exponentialBackoff({ initialMs: 100, maxMs: 5000, jitter: 'equal' });

/** Competing Consumers for one queue in this process. Create through `Messaging.consume`. */
export class Consumer<T> {
  readonly queue: QueueClient<T>;
  /** Resolves when the consumer has stopped (after close). */
  readonly stopped: Promise<void>;
  readonly #handler: MessageHandler<T>;
  readonly #emit: (event: ConsumerEvent) => void;
  readonly #concurrency: number;
  readonly #prefetch: number;
  readonly #lockMs: number | undefined;
  readonly #autoRenew: boolean;
  readonly #maxRenewMs: number;
  readonly #retryBackoff: Backoff;
  readonly #rateLimit: RateLimiter | undefined;
  readonly #rateLimitKey: string;
  readonly #idlePollMs: number;
  readonly #shutdownTimeoutMs: number;
  readonly #sessionBatch: number;
  /** Received and not yet finished: waiting for a slot (running false) or running. */
  readonly #held = new Set<Job>();
  readonly #buffer: Job[] = [];
  #running = 0;
  #closing = false;
  #closed: Promise<void> | undefined;
  #signalled = false;
  #wake: (() => void) | undefined;
  #pumping = false;
  #renewTimer: TimerHandle | undefined;
  #processed = 0;
  #resolveStopped: () => void = () => {};
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
    const concurrency = options.concurrency ?? 1;
    assertInteger('concurrency', concurrency, 1, 10_000);
    const prefetch = options.prefetch ?? 0;
    assertInteger('prefetch', prefetch, 0, 10_000);
    if (options.lockMs !== undefined) assertDuration('lockMs', options.lockMs, { allowZero: false });
    const maxRenewMs = options.maxRenewMs ?? 5 * 60_000;
    assertDuration('maxRenewMs', maxRenewMs);
    const idlePollMs = options.idlePollMs ?? 5000;
    assertDuration('idlePollMs', idlePollMs, { allowZero: false });
    const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 30_000;
    assertDuration('shutdownTimeoutMs', shutdownTimeoutMs);
    const sessionBatch = options.sessionBatch ?? 1;
    assertInteger('sessionBatch', sessionBatch, 1, 1000);
    this.queue = queue;
    this.#continues = queue.messaging.backend.completeAndReceive !== undefined;
    this.#handler = handler;
    this.#emit = emit;
    this.#concurrency = concurrency;
    this.#prefetch = prefetch;
    this.#lockMs = options.lockMs;
    this.#autoRenew = options.autoRenew ?? true;
    this.#maxRenewMs = maxRenewMs;
    this.#retryBackoff =
      options.retryBackoff ?? exponentialBackoff({ initialMs: 1000, maxMs: 60_000, jitter: 'equal' });
    this.#rateLimit = options.rateLimit;
    this.#rateLimitKey = options.rateLimitKey ?? queue.name;
    this.#idlePollMs = idlePollMs;
    this.#shutdownTimeoutMs = shutdownTimeoutMs;
    this.#sessionBatch = sessionBatch;
    this.stopped = new Promise((resolve) => {
      this.#resolveStopped = resolve;
    });
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
    this.#closed ??= this.#shutdown(options.timeoutMs ?? this.#shutdownTimeoutMs);
    return this.#closed;
  }

  async #run(): Promise<void> {
    const { messaging, name } = this.queue;
    const unwatch = messaging.backend.watch(name, () => this.#signal());
    let failures = 0;
    try {
      while (!this.#closing) {
        const window = this.#concurrency + this.#prefetch;
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
          this.#signalled = false;
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
          failures = 0;
        } catch (error) {
          failures++;
          const retryInMs = RECEIVE_RETRY.delay(failures, 0);
          this.#event({ type: 'receive-failed', error, retryInMs });
          await this.#idle(retryInMs, false);
          continue;
        }
        if (result.messages.length === 0) {
          await this.#idle(Math.min(this.#idlePollMs, dueIn(messaging.clock, result.nextDueAt)), true);
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
    const batches =
      this.#sessionBatch > 1 && settings.sessions && this.queue.messaging.backend.sessionBatches;
    return {
      lockMs: this.#lockMs ?? settings.lockDurationMs,
      sessionBatch: batches === true ? this.#sessionBatch : undefined,
    };
  }

  /**
   * Holds received messages and starts them as slots allow. Received in session batches, messages of one session
   * in one answer were locked together (nothing else shares a session there): they run in order, one after
   * another, in the slot of the first.
   */
  #take(messages: readonly ReceivedMessage<T>[], { lockMs, sessionBatch }: ReceiveSettings): void {
    const receivedAt = this.queue.messaging.clock.monotonic();
    const lastOfSession = new Map<string, Job>();
    for (const message of messages) {
      const job = new Job(message, receivedAt);
      this.#held.add(job);
      const session = sessionBatch === undefined ? undefined : message.sessionId;
      const previous = session === undefined ? undefined : lastOfSession.get(session);
      if (previous === undefined) this.#buffer.push(job);
      else previous.next = job;
      if (session !== undefined) lastOfSession.set(session, job);
    }
    this.#armRenewal(lockMs);
    void this.#pump();
  }

  /** Starts buffered messages while slots are free, through the rate limiter when there is one. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (!this.#closing && this.#running < this.#concurrency && this.#buffer.length > 0) {
        // Without a rate limiter, jobs start in this turn.
        if (this.#rateLimit !== undefined && !(await this.#admit())) break;
        const job = this.#buffer.shift();
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
    const limiter = this.#rateLimit as RateLimiter;
    while (!this.#closing) {
      const permit = await limiter.acquire(this.#rateLimitKey);
      if (permit.allowed) return !this.#closing;
      const waitMs = Number.isFinite(permit.retryAfterMs)
        ? Math.max(1, permit.retryAfterMs)
        : this.#idlePollMs;
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
      this.#signal();
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
    // Abandoned (or its lock lost), the message took the rest of its batch back to the queue with it.
    const settlement = message.settlement;
    if (settlement !== 'completed' && settlement !== 'dead-lettered') return this.#drop(next);
    if (!this.#runnable(next)) return this.#drop(next);
    if (this.#rateLimit !== undefined && !(await this.#admit())) return undefined;
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
    for (let job: Job | undefined = from; job !== undefined; job = job.next) this.#held.delete(job);
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
    const free = this.#concurrency + this.#prefetch - (this.#held.size - 1) - this.#reserved;
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
      (error: unknown) => {
        if (error instanceof MessageLockLostError) this.#event({ type: 'lock-lost', messageId: message.id });
        else this.#event({ type: 'settle-failed', operation: 'complete', error });
      },
    );
    this.#settling.add(settling);
    void settling.finally(() => {
      this.#settling.delete(settling);
      this.#signal();
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
    try {
      const settings = await this.#settings();
      if (message.deliveryCount >= settings.maxDeliveryCount) {
        const description = error instanceof Error ? error.message : String(error);
        await message.deadLetter(DEAD_LETTER_MAX_DELIVERIES, description);
        this.#event({
          type: 'message-dead-lettered',
          messageId: message.id,
          deliveryCount: message.deliveryCount,
          reason: DEAD_LETTER_MAX_DELIVERIES,
          description,
        });
        return;
      }
      const retryInMs = Math.round(this.#retryBackoff.delay(message.deliveryCount, 0));
      await message.abandon({ delayMs: retryInMs });
      this.#event({
        type: 'message-failed',
        messageId: message.id,
        deliveryCount: message.deliveryCount,
        error,
        retryInMs,
      });
    } catch (settleError) {
      if (settleError instanceof MessageLockLostError)
        this.#event({ type: 'lock-lost', messageId: message.id });
      else this.#event({ type: 'settle-failed', operation: 'abandon', error: settleError });
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

  /** One timer renews every held lock that is past half its duration, in one batched call. */
  #armRenewal(lockMs: number): void {
    if (!this.#autoRenew || this.#renewTimer !== undefined || this.#closing) return;
    const { messaging } = this.queue;
    const every = Math.max(1, Math.floor(lockMs / 3));
    this.#renewTimer = messaging.clock.setTimeout(
      () => {
        this.#renewTimer = undefined;
        void this.#renew(lockMs).finally(() => {
          if (this.#held.size > 0) this.#armRenewal(lockMs);
        });
      },
      every,
      { unref: true },
    );
  }

  async #renew(lockMs: number): Promise<void> {
    const { messaging, name } = this.queue;
    const now = messaging.clock.now();
    const monotonic = messaging.clock.monotonic();
    const due: Job[] = [];
    for (const job of this.#held) {
      if (job.message.settled || job.message.lockedUntil - now > lockMs / 2) continue;
      if (monotonic - job.receivedAt < this.#maxRenewMs) due.push(job);
      else if (job.message.lockedUntil <= now && !job.aborted) this.#lockLost(job);
    }
    if (due.length === 0) return;
    let renewed: (number | undefined)[];
    try {
      renewed = await messaging.backend.renewLocks(
        name,
        due.map((job) => job.message.lockToken),
        lockMs,
        now,
      );
    } catch (error) {
      this.#event({ type: 'settle-failed', operation: 'renew', error });
      return;
    }
    due.forEach((job, i) => {
      const until = renewed[i];
      if (until !== undefined) {
        job.message.extendedTo(until);
        return;
      }
      if (!job.message.settled) this.#lockLost(job);
    });
  }

  /** The message may be handed to another consumer now: stop working on it. */
  #lockLost(job: Job): void {
    this.#event({ type: 'lock-lost', messageId: job.message.id });
    job.abort(new MessageLockLostError(this.queue.name, job.message.id));
    if (!job.running) this.#held.delete(job);
  }

  async #settings() {
    return this.queue.messaging.settingsOf(this.queue.name);
  }

  /** Waits for a wake-up (a free slot, a backend signal when `onSignal`, close) or `ms`. */
  #idle(ms: number, onSignal: boolean): Promise<void> {
    if (this.#closing || (onSignal && this.#signalled)) {
      this.#signalled = false;
      return Promise.resolve();
    }
    const { clock } = this.queue.messaging;
    return new Promise<void>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = () => {
        if (timer !== undefined) clock.clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      this.#wake = done;
      if (Number.isFinite(ms)) timer = clock.setTimeout(done, ms);
    });
  }

  #signal(): void {
    this.#signalled = true;
    this.#wake?.();
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    assertDuration('timeoutMs', timeoutMs);
    const { messaging, name } = this.queue;
    this.#closing = true;
    this.#closeSignal.abort();
    this.#wake?.();
    await this.#loop;
    let released = 0;
    const waiting: Job[] = [];
    for (const head of this.#buffer.splice(0))
      for (let job: Job | undefined = head; job !== undefined; job = job.next) waiting.push(job);
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
    if (this.#renewTimer !== undefined) messaging.clock.clearTimeout(this.#renewTimer);
    const stillRunning = stragglers.filter((job) => job.running).length;
    this.#event({ type: 'consumer-stopped', drained: runningAtClose - stillRunning, released });
    this.#resolveStopped();
  }

  /** Gives a message back without penalty beyond the delivery it already counted. */
  async #release(message: ReceivedMessage<unknown>): Promise<boolean> {
    if (message.settled) return false;
    try {
      await message.abandon();
      return true;
    } catch (error) {
      if (error instanceof MessageLockLostError) this.#event({ type: 'lock-lost', messageId: message.id });
      else this.#event({ type: 'settle-failed', operation: 'abandon', error });
      return false;
    }
  }

  #onJobDone(listener: () => void): () => void {
    this.#jobDoneListeners.add(listener);
    return () => this.#jobDoneListeners.delete(listener);
  }

  #event(event: DistributiveOmit<ConsumerEvent, 'component' | 'name' | 'queue' | 'at'>): void {
    const { messaging, name } = this.queue;
    if (!messaging.events.active) return;
    this.#emit({
      ...event,
      component: 'messaging',
      name,
      queue: name,
      at: messaging.clock.now(),
    } as ConsumerEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
