// The Redis backend's wake-ups: one subscriber connection carrying every watched queue's channel.
import type { Redis } from 'ioredis';
import { quit, type RedisConnection } from './connection.js';

/**
 * The scripts PUBLISH on a channel per queue; one subscriber connection per backend (a duplicate of the
 * client) carries every watched queue, resubscribes after a reconnect and then wakes every watcher, since
 * messages may have arrived while it was away.
 */
export class RedisWatchers {
  readonly #connection: RedisConnection;
  #subscriber: Promise<Redis> | undefined;
  /** Channel -> listeners. */
  readonly #watchers = new Map<string, Set<() => void>>();

  constructor(connection: RedisConnection) {
    this.#connection = connection;
  }

  watch(queue: string, listener: () => void): () => void {
    const channel = this.#connection.channel(queue);
    let listeners = this.#watchers.get(channel);
    if (listeners === undefined) {
      listeners = new Set();
      this.#watchers.set(channel, listeners);
      this.#subscribeChannel(channel);
    }
    // Wrapped so the same function can watch twice and unwatch once.
    const entry = () => listener();
    listeners.add(entry);
    return () => {
      if (!listeners.delete(entry) || listeners.size > 0 || this.#watchers.get(channel) !== listeners) return;
      this.#watchers.delete(channel);
      void this.#subscriber?.then((subscriber) => subscriber.unsubscribe(channel)).catch(() => {});
    };
  }

  /** Forgets every watcher and closes the subscriber connection. */
  async close(): Promise<void> {
    this.#watchers.clear();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    if (subscriber !== undefined) await quit(await subscriber.catch(() => undefined));
  }

  #subscribeChannel(channel: string): void {
    this.#subscriber ??= this.#openSubscriber();
    this.#subscriber
      .then((subscriber) => subscriber.subscribe(channel))
      // Anything sent between watch() and the subscription taking effect was not announced.
      .then(() => this.#wake(channel))
      .catch(() => {});
  }

  async #openSubscriber(): Promise<Redis> {
    const subscriber = (await this.#connection.client()).duplicate();
    subscriber.on('error', () => {});
    subscriber.on('message', (channel: string) => this.#wake(channel));
    let connected = false;
    subscriber.on('ready', () => {
      if (!connected) {
        connected = true;
        return;
      }
      // A reconnect: ioredis has resent SUBSCRIBE before 'ready'; once PING answers they are in force, and
      // whatever was published while the connection was down must be looked for.
      subscriber
        .ping()
        .then(() => {
          for (const channel of this.#watchers.keys()) this.#wake(channel);
        })
        .catch(() => {});
    });
    return subscriber;
  }

  #wake(channel: string): void {
    const listeners = this.#watchers.get(channel);
    if (listeners === undefined) return;
    for (const listener of listeners) queueMicrotask(listener);
  }
}
