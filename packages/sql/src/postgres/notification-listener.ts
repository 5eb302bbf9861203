import type { Notification, PoolClient } from 'pg';
import { hearConnectionErrors } from './connection-loss.js';

const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 2000;

/**
 * Wake-ups over LISTEN/NOTIFY: one connection LISTENs on the backend's channel for every watched queue (the
 * payload is the queue name). It is opened on the first watch, held until close, and re-established with backoff
 * when it drops (server restart, pg_terminate_backend). Every time LISTEN takes effect all watchers are woken
 * once, because notifications sent while nobody listened are gone.
 */
export class NotificationListener {
  readonly #connect: () => Promise<PoolClient>;
  readonly #channel: string;
  readonly #watchers = new Map<string, Set<() => void>>();
  readonly #payloadWatchers = new Set<(payload: string | undefined) => void>();
  readonly #lostWatchers = new Set<() => void>();
  #client: PoolClient | undefined;
  /** Removes our handlers from a client we hold or are opening. */
  readonly #detach = new Map<PoolClient, () => void>();
  #opening: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryMs = FIRST_RETRY_MS;
  #closed = false;

  constructor(connect: () => Promise<PoolClient>, channel: string) {
    this.#connect = connect;
    this.#channel = channel;
  }

  /** True while LISTEN is in effect. */
  get listening(): boolean {
    return this.#client !== undefined;
  }

  watch(queue: string, listener: () => void): () => void {
    let listeners = this.#watchers.get(queue);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watchers.set(queue, listeners);
    }
    // Wrapped so the same function can watch twice and unwatch once.
    const entry = () => listener();
    listeners.add(entry);
    this.#ensureListening();
    return () => {
      listeners.delete(entry);
      if (listeners.size === 0 && this.#watchers.get(queue) === listeners) this.#watchers.delete(queue);
    };
  }

  /**
   * Hears every notification on the channel with its payload, and `undefined` each time LISTEN takes effect (what
   * was sent while nobody listened is gone: assume anything changed). `onLost` hears the LISTEN connection drop:
   * from then until the next `undefined` (and before the first), notifications go unheard.
   */
  watchAll(listener: (payload: string | undefined) => void, onLost?: () => void): () => void {
    const entry = (payload: string | undefined) => listener(payload);
    const lostEntry = onLost === undefined ? undefined : () => onLost();
    this.#payloadWatchers.add(entry);
    if (lostEntry !== undefined) this.#lostWatchers.add(lostEntry);
    this.#ensureListening();
    return () => {
      this.#payloadWatchers.delete(entry);
      if (lostEntry !== undefined) this.#lostWatchers.delete(lostEntry);
    };
  }

  /** Resolves when the LISTEN being opened (if any) is in effect or has failed (then a retry is scheduled). */
  async opened(): Promise<void> {
    await this.#opening;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#watchers.clear();
    this.#payloadWatchers.clear();
    this.#lostWatchers.clear();
    clearTimeout(this.#retryTimer);
    await this.#opening;
    this.#drop(this.#client);
  }

  #ensureListening(): void {
    if (this.#closed || this.#client || this.#opening || this.#retryTimer) return;
    this.#opening = this.#open().finally(() => {
      this.#opening = undefined;
    });
  }

  async #open(): Promise<void> {
    let client: PoolClient | undefined;
    try {
      client = await this.#connect();
      const held = client;
      const lost = () => this.#lost(held);
      held.on('notification', this.#dispatch);
      held.on('error', lost);
      held.on('end', lost);
      this.#detach.set(held, () => {
        held.off('notification', this.#dispatch);
        held.off('error', lost);
        held.off('end', lost);
      });
      await client.query(`LISTEN "${this.#channel}"`);
    } catch {
      this.#drop(client);
      this.#retry();
      return;
    }
    if (this.#closed) {
      this.#drop(client);
      return;
    }
    this.#client = client;
    this.#retryMs = FIRST_RETRY_MS;
    this.#wakeAll();
  }

  readonly #dispatch = (message: Notification): void => {
    if (message.channel !== this.#channel || message.payload === undefined) return;
    const listeners = this.#watchers.get(message.payload);
    if (listeners) for (const listener of listeners) listener();
    for (const listener of this.#payloadWatchers) listener(message.payload);
  };

  #lost(client: PoolClient): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#drop(client);
    for (const listener of this.#lostWatchers) listener();
    this.#retry();
  }

  /** Detaches from the client and destroys its connection (a LISTENing session is not fit for reuse). */
  #drop(client: PoolClient | undefined): void {
    if (client === undefined) return;
    if (this.#client === client) this.#client = undefined;
    this.#detach.get(client)?.();
    this.#detach.delete(client);
    // A late socket error after we let go must not become an unhandled 'error' event.
    hearConnectionErrors(client).release(true);
  }

  #retry(): void {
    if (this.#closed) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#ensureListening();
    }, delay);
    this.#retryTimer.unref();
  }

  #wakeAll(): void {
    for (const listeners of this.#watchers.values()) for (const listener of listeners) listener();
    for (const listener of this.#payloadWatchers) listener(undefined);
  }
}
