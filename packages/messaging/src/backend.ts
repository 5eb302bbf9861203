/**
 * The port every message store implements (memory, SQLite, PostgreSQL, Redis). It is deliberately small and
 * byte-oriented: encoding, claim checks, consumers, backoff and rate limits live above it, once, in the client.
 * Every operation that changes state is atomic on its backend. `contract.ts` is the executable definition of the
 * semantics below; each adapter runs it.
 *
 * Time: every call that depends on time takes `now` (epoch ms) from the client's injectable clock, so the same
 * semantics hold under a virtual clock in tests. Processes sharing a backend must have synchronised clocks.
 */

/** Priorities run from 0 (lowest, the default) to 9 (highest). */
export const MIN_PRIORITY = 0;
export const MAX_PRIORITY = 9;

/**
 * How a queue orders available messages:
 * - `strict`: highest priority first, FIFO within a priority; a low message may wait forever behind high ones.
 * - `weighted`: earliest-deadline ordering where each priority step is worth `agingMs` of waiting, so a low message
 *   overtakes newer high ones once it has waited long enough (no starvation). With one priority both are FIFO.
 */
export type PriorityPolicy =
  | { readonly policy: 'strict' }
  | { readonly policy: 'weighted'; readonly agingMs: number };

/** A queue's settings, stored with the queue so that every process applies the same ones. */
export interface QueueSettings {
  /** Default lock (visibility timeout) of a receive. */
  readonly lockDurationMs: number;
  /** A message delivered this many times and then abandoned or left to expire is dead-lettered. */
  readonly maxDeliveryCount: number;
  /** A message id seen within this window is accepted once; 0 turns duplicate detection off. */
  readonly duplicateWindowMs: number;
  /** TTL given to messages sent without one; undefined means they never expire. */
  readonly defaultTtlMs: number | undefined;
  /** Largest encoded body accepted, in bytes. */
  readonly maxMessageBytes: number;
  readonly priority: PriorityPolicy;
  /** Messages with the same session id are delivered in order, one at a time (Sequential Convoy). */
  readonly sessions: boolean;
  /**
   * What a session does once one of its messages is dead-lettered (see holdsSession): `hold` keeps its later
   * messages waiting until that dead letter is resent (it is then delivered before them) or purged; `continue`
   * delivers the next one, as if the dead letter had been completed.
   */
  readonly onSessionDeadLetter: SessionDeadLetterPolicy;
}

export type SessionDeadLetterPolicy = 'hold' | 'continue';

/**
 * The ordering key of an available message: smaller is delivered first, ties by send order (`sequence`).
 * Strict priority uses a step larger than any epoch-ms time, so priority always dominates availability.
 */
export function rankOf(availableAt: number, priority: number, priorityPolicy: PriorityPolicy): number {
  const step = priorityPolicy.policy === 'strict' ? STRICT_PRIORITY_STEP : priorityPolicy.agingMs;
  return availableAt + (MAX_PRIORITY - priority) * step;
}
/** 10^13 ms is about 317 years: larger than any availableAt, and 9 steps stay far below 2^53. */
export const STRICT_PRIORITY_STEP = 1e13;

export interface MessageProperties {
  /** Unique per logical message; the duplicate-detection key. */
  readonly id: string;
  readonly contentType?: string | undefined;
  readonly correlationId?: string | undefined;
  readonly replyTo?: string | undefined;
  /** What the message is about (a type name, an event name); topic filters can match on it. */
  readonly subject?: string | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** Set only on queues with sessions; required there. */
  readonly sessionId?: string | undefined;
  /** Integer MIN_PRIORITY..MAX_PRIORITY. */
  readonly priority?: number | undefined;
}

export interface OutgoingMessage extends MessageProperties {
  readonly body: Uint8Array;
  /** Not deliverable before this time (scheduled or delayed messages); undefined means now. */
  readonly availableAt?: number | undefined;
  /** After this time the message is dead-lettered with reason `expired` instead of delivered. */
  readonly expiresAt?: number | undefined;
}

/** A message as stored: what peek and dead-letter listings return. */
export interface StoredMessage extends MessageProperties {
  readonly body: Uint8Array;
  readonly priority: number;
  /** Position in the queue, assigned by the backend in send order; unique per queue, only grows. */
  readonly sequence: number;
  readonly enqueuedAt: number;
  readonly availableAt: number;
  readonly expiresAt: number | undefined;
  readonly deliveryCount: number;
  readonly state: MessageState;
}

export type MessageState = 'available' | 'scheduled' | 'locked' | 'waiting' | 'dead';

export interface DeliveredMessage extends StoredMessage {
  /** Identifies this delivery; complete/abandon/renew with an older delivery's token fail with lock-lost. */
  readonly lockToken: string;
  readonly lockedUntil: number;
}

export interface DeadLetter extends StoredMessage {
  readonly deadLetterReason: string;
  readonly deadLetterDescription: string | undefined;
  readonly deadLetteredAt: number;
  /** The later messages of its session wait for it: until it is resent or purged (see holdsSession). */
  readonly holdsSession: boolean;
}

/** Reasons the backends themselves dead-letter with; users give their own through `deadLetter`. */
export const DEAD_LETTER_EXPIRED = 'expired';
export const DEAD_LETTER_MAX_DELIVERIES = 'max-delivery-count-exceeded';

/**
 * Whether a message dead-lettered with `reason` holds its session (QueueSettings.onSessionDeadLetter): on a
 * sessions queue set to `hold`, every dead letter of a session message does, except an expired one: expiry says the
 * message is no longer worth delivering, not that handling it failed, so the session goes on without it.
 */
export function holdsSession(
  settings: QueueSettings,
  sessionId: string | undefined,
  reason: string,
): boolean {
  return (
    settings.sessions &&
    sessionId !== undefined &&
    settings.onSessionDeadLetter === 'hold' &&
    reason !== DEAD_LETTER_EXPIRED
  );
}

export interface SendOutcome {
  readonly id: string;
  /** False when the id was seen within the duplicate window; nothing was stored. */
  readonly accepted: boolean;
  readonly sequence: number | undefined;
}

export interface ReceiveRequest {
  readonly max: number;
  readonly lockMs: number;
  readonly now: number;
  /**
   * On a sessions queue, how many of a session's messages one receive may lock together (default 1): with its head
   * come up to `sessionBatch - 1` of the messages right behind it, in order, as long as each is due and not expired.
   * `max` bounds the heads (the slots a receiver fills), not these: each has its own lock token and delivery count,
   * and the receiver works through them in order, after their head. Backends without batches (PostgreSQL) lock the
   * head alone, which the contract allows.
   */
  readonly sessionBatch?: number | undefined;
}

export interface ReceiveResult {
  readonly messages: DeliveredMessage[];
  /**
   * When nothing was available: the earliest time a scheduled message becomes due or a lock expires, so the
   * caller knows when to look again without polling. Undefined when nothing is pending at all.
   */
  readonly nextDueAt: number | undefined;
}

/** Per-token outcome of settle operations: `lost` means the lock expired and the message was delivered again. */
export type SettleOutcome = 'ok' | 'lost';

export interface QueueStats {
  /** Deliverable now. */
  readonly available: number;
  readonly scheduled: number;
  /** In flight: delivered and locked. */
  readonly locked: number;
  /** Session messages queued behind their session's head. */
  readonly waiting: number;
  readonly deadLettered: number;
  /** available + scheduled + locked + waiting: everything not yet completed or dead-lettered. */
  readonly length: number;
  /** Age of the oldest message not yet completed or dead-lettered, at `now`; 0 when there is none. */
  readonly oldestAgeMs: number;
}

export interface DeadLetterQuery {
  readonly limit: number;
  /** Only dead letters with a larger sequence (paging). */
  readonly afterSequence?: number | undefined;
}

export interface PeekQuery {
  readonly limit: number;
  readonly afterSequence?: number | undefined;
}

/**
 * Routes published messages to queues. `topics` are patterns over dot-separated topic names: `*` matches one
 * segment, `#` any number (including none). `filter` must match too.
 */
export interface Subscription {
  readonly queue: string;
  readonly topics: readonly string[];
  readonly filter: MessageFilter | undefined;
}

/**
 * A JSON filter on message properties; every listed condition must hold. A header condition is a value (equal),
 * a list of values (any equal), `{ exists }` or `{ prefix }`.
 */
export interface MessageFilter {
  readonly subject?: string | readonly string[] | undefined;
  readonly headers?: Readonly<Record<string, HeaderCondition>> | undefined;
}
export type HeaderCondition =
  | string
  | readonly string[]
  | { readonly exists: boolean }
  | { readonly prefix: string };

export interface TopicSettings {
  /** Published messages are kept this long so new subscriptions can ask for them; 0 keeps none. */
  readonly retentionMs: number;
}

export interface PublishOutcome {
  readonly id: string;
  /** Queues the message was copied to (after duplicate detection on each). */
  readonly deliveredTo: readonly string[];
}

/** What a new subscription receives from the topic's retained messages. */
export type ReplayFrom = 'none' | 'retained' | { readonly since: number };

export interface MessageBackend {
  /** A short name for errors, events and metrics: 'memory', 'sqlite', 'postgres', 'redis'. */
  readonly kind: string;
  /** Whether a receive locks a session's next messages with its head (ReceiveRequest.sessionBatch); default false. */
  readonly sessionBatches?: boolean;

  /** Creates the queue, or replaces the settings of an existing one. */
  putQueue(name: string, settings: QueueSettings): Promise<void>;
  /** Undefined when the queue does not exist. */
  getQueue(name: string): Promise<QueueSettings | undefined>;
  listQueues(): Promise<string[]>;
  /** Deletes the queue, its messages, dead letters, sessions and subscriptions. False if it did not exist. */
  deleteQueue(name: string): Promise<boolean>;

  /**
   * Stores messages in order, atomically as a batch. Applies the queue's duplicate window (also within the batch),
   * default TTL and session gating. Throws UnknownQueueError. Bodies are already checked against maxMessageBytes.
   */
  send(queue: string, messages: readonly OutgoingMessage[], now: number): Promise<SendOutcome[]>;

  /**
   * Locks and returns up to `max` available messages in rank order, each with its delivery count raised.
   * Before choosing, it makes due scheduled messages available and returns messages whose lock expired; a message
   * whose lock expired after its last allowed delivery, or that expired (TTL), is dead-lettered instead.
   * On a sessions queue only the head of each session (its lowest live message) is ever available (none while a
   * dead letter holds the session), and the only messages locked behind it are those a receive locked with it
   * (ReceiveRequest.sessionBatch).
   */
  receive(queue: string, request: ReceiveRequest): Promise<ReceiveResult>;

  /** Extends locks to now + lockMs; returns the new lockedUntil, or undefined where the lock was lost. */
  renewLocks(
    queue: string,
    lockTokens: readonly string[],
    lockMs: number,
    now: number,
  ): Promise<(number | undefined)[]>;
  /**
   * Deletes the messages. On a sessions queue, once none of a session's messages is locked, available or scheduled,
   * and no dead letter holds it, its next waiting message becomes available.
   */
  complete(queue: string, lockTokens: readonly string[], now: number): Promise<SettleOutcome[]>;
  /**
   * Optional: `complete` of one message, then (unless its lock was lost) `receive`, in one round trip and one
   * transaction. On a sessions queue the session's next message, made available by the completion, can come back
   * at once, so a session's messages follow each other without a wake-up and a receive between them. Backends
   * without it get the two calls in turn (completeAndReceive in messaging.ts).
   */
  completeAndReceive?(
    queue: string,
    lockToken: string,
    request: ReceiveRequest,
  ): Promise<{ outcome: SettleOutcome; received: ReceiveResult }>;
  /**
   * Releases the lock: the message becomes available again at now + delayMs (re-ranked), or is dead-lettered with
   * DEAD_LETTER_MAX_DELIVERIES when its delivery count reached the queue's maximum. On a sessions queue the
   * session's messages locked behind it go back to waiting (their locks are lost), and it waits too while a
   * message of its session before it is still locked; a lock that expires does the same.
   */
  abandon(queue: string, lockToken: string, delayMs: number, now: number): Promise<SettleOutcome>;
  /**
   * Moves the message to the dead-letter queue. When the dead letter holds its session (holdsSession), the
   * session's messages locked behind it go back to waiting (their locks are lost) and none of them is delivered
   * until the dead letter is resent or purged; otherwise the session moves on.
   */
  deadLetter(
    queue: string,
    lockToken: string,
    reason: string,
    description: string | undefined,
    now: number,
  ): Promise<SettleOutcome>;

  /** Messages not yet completed or dead-lettered, in sequence order, without locking them. */
  peek(queue: string, query: PeekQuery): Promise<StoredMessage[]>;
  stats(queue: string, now: number): Promise<QueueStats>;

  listDeadLetters(queue: string, query: DeadLetterQuery): Promise<DeadLetter[]>;
  /**
   * Puts dead letters back as new deliveries (count reset, available now); returns how many were resent. A session
   * message rejoins its session in sequence order: a resent dead letter that held its session releases it and is
   * delivered before the messages that waited behind it.
   */
  resendDeadLetters(queue: string, sequences: readonly number[], now: number): Promise<number>;
  /**
   * Deletes the given dead letters, or all of the queue's when `sequences` is undefined; returns how many. A
   * session held by a deleted dead letter goes on with its next message (available from `now`).
   */
  purgeDeadLetters(queue: string, sequences: readonly number[] | undefined, now: number): Promise<number>;

  getSessionState(queue: string, sessionId: string): Promise<Uint8Array | undefined>;
  /** Undefined clears the state. */
  setSessionState(queue: string, sessionId: string, state: Uint8Array | undefined): Promise<void>;

  putTopic(name: string, settings: TopicSettings): Promise<void>;
  getTopic(name: string): Promise<TopicSettings | undefined>;
  listTopics(): Promise<string[]>;
  deleteTopic(name: string): Promise<boolean>;
  /**
   * Binds a queue to topic patterns (replacing its previous binding) and, when asked, copies matching retained
   * messages into it, atomically with the binding so nothing published meanwhile is missed or doubled.
   */
  subscribe(subscription: Subscription, replay: ReplayFrom, now: number): Promise<void>;
  unsubscribe(queue: string): Promise<boolean>;
  listSubscriptions(): Promise<Subscription[]>;
  /**
   * Copies each message to every subscribed queue whose patterns and filter match, applying each queue's own
   * settings (duplicate window, TTL, sessions), and retains it when the topic keeps messages. Throws
   * UnknownTopicError.
   */
  publish(topic: string, messages: readonly OutgoingMessage[], now: number): Promise<PublishOutcome[]>;

  /**
   * Calls `listener` (soon, possibly more than once, possibly spuriously) after messages may have become available
   * on `queue` through any process: sends, publishes, abandons, resends. Time-based availability is not signalled:
   * callers use ReceiveResult.nextDueAt. Returns the function that stops watching.
   */
  watch(queue: string, listener: () => void): () => void;

  /** Releases connections and timers the backend owns (not clients the user passed in). */
  close(): Promise<void>;
}

/**
 * Completes a message and then, unless its lock was lost, receives: in one call where the backend has
 * `completeAndReceive`, else as the two calls in turn.
 */
export async function completeAndReceive(
  backend: MessageBackend,
  queue: string,
  lockToken: string,
  request: ReceiveRequest,
): Promise<{ outcome: SettleOutcome; received: ReceiveResult }> {
  if (backend.completeAndReceive !== undefined) return backend.completeAndReceive(queue, lockToken, request);
  const [outcome] = (await backend.complete(queue, [lockToken], request.now)) as [SettleOutcome];
  if (outcome === 'lost') return { outcome, received: { messages: [], nextDueAt: undefined } };
  return { outcome, received: await backend.receive(queue, request) };
}
