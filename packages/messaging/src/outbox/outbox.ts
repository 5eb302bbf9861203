import {
  assertDuration,
  assertInteger,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  randomId,
  StoreFailures,
  StratusError,
  type StratusEvent,
  systemClock,
  type TimerHandle,
} from '@stratus/core';
import type { MessageProperties, OutgoingMessage } from '../backend.js';
import type { Messaging } from '../messaging.js';
import { assertQueueName, assertTopicName } from '../options.js';
import { buildOutgoing, type MessageToSend } from '../outgoing.js';

/** Where an outbox message goes once its transaction committed. */
export type OutboxDestination = { readonly queue: string } | { readonly topic: string };

/** A message waiting in the outbox, in the order it was written (`sequence`). */
export interface OutboxRecord {
  readonly sequence: number;
  readonly destination: OutboxDestination;
  readonly message: OutgoingMessage;
  readonly createdAt: number;
}

export interface DeadOutboxRecord extends OutboxRecord {
  readonly failedAt: number;
  readonly error: string;
}

/**
 * Where an outbox lives: a table in the application's own database, written in the application's transactions.
 * `SqliteOutbox` and `PostgresOutbox` implement it; the relay only needs this.
 */
export interface OutboxStore {
  readonly kind: string;
  /** The oldest waiting records, by sequence. */
  read(limit: number): Promise<OutboxRecord[]>;
  remove(sequences: readonly number[]): Promise<void>;
  /** Moves a record that can never be delivered aside, with the error. */
  bury(record: OutboxRecord, error: string, now: number): Promise<void>;
  listDead(limit: number): Promise<DeadOutboxRecord[]>;
  /** Puts buried records back in line (with their original sequence, so before newer ones). */
  requeueDead(sequences: readonly number[]): Promise<number>;
  /** Takes or renews the named relay lease for `owner` until now + ttlMs; false while someone else holds it. */
  acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
  releaseLease(name: string, owner: string): Promise<void>;
  /** Waiting records and the age of the oldest. */
  pending(now: number): Promise<{ count: number; oldestAgeMs: number }>;
  /** Calls `listener` after records were added (in this process at least; other processes are polled). */
  watch(listener: () => void): () => void;
}

export function assertDestination(destination: unknown): asserts destination is OutboxDestination {
  if (typeof destination !== 'object' || destination === null) {
    throw new InvalidOptionsError('destination', 'expected { queue } or { topic }');
  }
  if ('queue' in destination) assertQueueName(destination.queue, 'destination.queue');
  else if ('topic' in destination) assertTopicName(destination.topic, 'destination.topic');
  else throw new InvalidOptionsError('destination', 'expected { queue } or { topic }');
}

/** Validates and encodes messages for an outbox row: the same rules as a direct send. */
export function prepareOutboxMessages<T>(
  messages: MessageToSend<T> | readonly MessageToSend<T>[],
  context: Parameters<typeof buildOutgoing>[1],
): OutgoingMessage[] {
  const list = Array.isArray(messages) ? messages : [messages as MessageToSend<T>];
  return list.map((message) => buildOutgoing(message, context));
}

/** Everything of a message but its body, as stored in an outbox row's JSON column. */
export function outboxProperties(message: OutgoingMessage): string {
  const { body: _body, ...properties } = message;
  return JSON.stringify(properties);
}

export function outboxMessage(properties: string, body: Uint8Array): OutgoingMessage {
  const parsed = JSON.parse(properties) as MessageProperties & { availableAt?: number; expiresAt?: number };
  return { ...parsed, body };
}

export function destinationOf(kind: string, name: string): OutboxDestination {
  return kind === 'topic' ? { topic: name } : { queue: name };
}

export interface OutboxRelayEvent extends StratusEvent {
  readonly component: 'outbox-relay';
  readonly type: 'relayed' | 'relay-failed' | 'buried' | 'lease-acquired' | 'lease-lost';
  readonly count?: number;
  readonly error?: unknown;
}

export interface OutboxRelayOptions {
  store: OutboxStore;
  /** Where messages go: any backend (the outbox and the queues need not share a database). */
  messaging: Messaging;
  /** Names the lease, so one relay at a time works on this outbox; default 'default'. */
  name?: string;
  /** Records relayed per round; default 100. */
  batchSize?: number;
  /** The lease is held this long without renewal; default 10 s. A crashed relay's successor waits at most this. */
  leaseMs?: number;
  /** How often to look for records written by other processes; default 100 ms. */
  pollMs?: number;
  clock?: Clock;
}

/**
 * Moves committed outbox records to their queues and topics, oldest first, and deletes them once sent. One relay
 * holds the lease at a time, so records go out in the order they were written. A crash between sending and
 * deleting sends the same message (same id) again on restart: the destination's duplicate detection drops it,
 * so nothing is lost, doubled (within the duplicate window) or reordered. A record rejected for good (a typed
 * error such as a missing queue or an oversized body) is buried, to be inspected and requeued.
 */
export class OutboxRelay {
  readonly events = new EventEmitter<OutboxRelayEvent>();
  readonly name: string;
  readonly owner = randomId();
  readonly #store: OutboxStore;
  readonly #messaging: Messaging;
  readonly #batchSize: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #clock: Clock;
  #running = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #signalled = false;
  #leaseUntil = 0;
  #relayed = 0;

  constructor(options: OutboxRelayOptions) {
    if (typeof options?.store?.read !== 'function')
      throw new InvalidOptionsError('store', 'an OutboxStore is required');
    if (typeof options.messaging?.queue !== 'function')
      throw new InvalidOptionsError('messaging', 'a Messaging is required');
    const batchSize = options.batchSize ?? 100;
    assertInteger('batchSize', batchSize, 1, 10_000);
    const leaseMs = options.leaseMs ?? 10_000;
    assertDuration('leaseMs', leaseMs, { allowZero: false });
    const pollMs = options.pollMs ?? 100;
    assertDuration('pollMs', pollMs, { allowZero: false });
    this.#store = options.store;
    this.#messaging = options.messaging;
    this.name = options.name ?? 'default';
    this.#batchSize = batchSize;
    this.#leaseMs = leaseMs;
    this.#pollMs = pollMs;
    this.#clock = options.clock ?? options.messaging.clock ?? systemClock;
  }

  /** Records relayed by this instance. */
  get relayed(): number {
    return this.#relayed;
  }

  start(): this {
    if (this.#running) return this;
    this.#running = true;
    this.#loop = this.#run();
    return this;
  }

  /** Stops after the current round and gives the lease back. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    if (this.#leaseUntil > 0) await this.#store.releaseLease(this.name, this.owner).catch(() => {});
    this.#leaseUntil = 0;
  }

  /** One round: relays what is waiting (up to batchSize) if this relay holds the lease. Returns how many. */
  async relayOnce(): Promise<number> {
    if (!(await this.#holdLease())) return 0;
    const records = await this.#store.read(this.#batchSize);
    let sent = 0;
    for (let i = 0; i < records.length; ) {
      // Consecutive records for one destination go in one atomic send.
      const first = records[i] as OutboxRecord;
      let j = i + 1;
      while (
        j < records.length &&
        sameDestination((records[j] as OutboxRecord).destination, first.destination)
      )
        j++;
      const group = records.slice(i, j);
      if (!(await this.#holdLease())) break;
      try {
        await this.#send(first.destination, group);
        await this.#store.remove(group.map((record) => record.sequence));
        sent += group.length;
      } catch (error) {
        // A transient failure ends the round; the next one starts again from this record.
        if (!(error instanceof StratusError)) throw error;
        // A typed rejection: find the record(s) that can never go, one at a time, and bury them.
        sent += await this.#sendOneByOne(group);
      }
      i = j;
    }
    this.#relayed += sent;
    if (sent > 0) this.#emit('relayed', { count: sent });
    return sent;
  }

  async #sendOneByOne(group: readonly OutboxRecord[]): Promise<number> {
    let sent = 0;
    for (const record of group) {
      try {
        await this.#send(record.destination, [record]);
        await this.#store.remove([record.sequence]);
        sent++;
      } catch (error) {
        if (!(error instanceof StratusError)) throw error;
        await this.#store.bury(record, error.message, this.#clock.now());
        this.#emit('buried', { count: 1, error });
      }
    }
    return sent;
  }

  async #send(destination: OutboxDestination, records: readonly OutboxRecord[]): Promise<void> {
    const messages = records.map((record) => record.message);
    if ('queue' in destination) await this.#messaging.queue(destination.queue).sendPrepared(messages);
    else await this.#messaging.topic(destination.topic).publishPrepared(messages);
  }

  async #holdLease(): Promise<boolean> {
    const now = this.#clock.now();
    // Renew once half the lease is gone; stop relaying a little before it ends, never after.
    if (now < this.#leaseUntil - this.#leaseMs / 2) return true;
    const held = await this.#store.acquireLease(this.name, this.owner, now, this.#leaseMs);
    if (held && this.#leaseUntil === 0) this.#emit('lease-acquired', {});
    if (!held && this.#leaseUntil > 0) this.#emit('lease-lost', {});
    this.#leaseUntil = held ? now + this.#leaseMs : 0;
    return held;
  }

  async #run(): Promise<void> {
    const unwatch = this.#store.watch(() => {
      this.#signalled = true;
      this.#wake?.();
    });
    const failures = new StoreFailures();
    try {
      while (this.#running) {
        this.#signalled = false;
        let waitMs = this.#pollMs;
        try {
          const sent = await this.relayOnce();
          failures.succeeded();
          if (sent === this.#batchSize) continue;
          if (this.#leaseUntil === 0) waitMs = Math.max(this.#pollMs, this.#leaseMs / 4);
        } catch (error) {
          waitMs = failures.failed();
          this.#emit('relay-failed', { error });
        }
        if (!this.#signalled) await this.#sleep(waitMs);
      }
    } finally {
      unwatch();
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: TimerHandle | undefined;
      const done = () => {
        if (timer !== undefined) this.#clock.clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      this.#wake = done;
      if (!this.#running) return done();
      // Not unref'd: a started relay keeps its process alive until stopped, with records to send or not.
      timer = this.#clock.setTimeout(done, ms);
    });
  }

  #emit(type: OutboxRelayEvent['type'], details: { count?: number; error?: unknown }): void {
    if (!this.events.active) return;
    this.events.emit({ component: 'outbox-relay', name: this.name, type, at: this.#clock.now(), ...details });
  }
}

function sameDestination(a: OutboxDestination, b: OutboxDestination): boolean {
  return 'queue' in a ? 'queue' in b && a.queue === b.queue : 'topic' in b && a.topic === b.topic;
}
