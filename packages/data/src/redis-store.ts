import { createRequire } from 'node:module';
import {
  assertObject,
  type Clock,
  InvalidOptionsError,
  randomId,
  systemClock,
  type Unsubscribe,
} from '@stratus/core';
import type { Redis } from 'ioredis';
import { LockWaiters } from './lock-waiters.js';
import { RedisScript } from './redis-script.js';
import type { CacheEntry, CacheLock, CacheStore, InvalidationMessage, WriteOptions } from './store.js';

/** Turns cached values into Redis strings and back; default JSON. */
export interface ValueCodec {
  encode(value: unknown): string;
  decode(text: string): unknown;
}

export const jsonCodec: ValueCodec = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => JSON.parse(text),
};

export interface RedisCacheStoreOptions {
  /** Your ioredis client (never closed by the store). Give this or `url`. */
  client?: Redis;
  /** A URL to open a client of the store's own (closed by `close()`). */
  url?: string;
  /** Prefix of every key and of the broadcast channel; default "stratus:cache:". */
  keyPrefix?: string;
  codec?: ValueCodec;
  /** Times the bounded waits on locks; default the system clock. */
  clock?: Clock;
}

// Stores an entry, drops the key's load lock (a load begun before this write must not overwrite it) and
// publishes, all in one step, so subscribers never hear of a write that did not happen.
// KEYS: value, lock. ARGV: payload, px, channel, message.
const SET_ENTRY = new RedisScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
`);

// KEYS: value and lock keys, alternating. ARGV: channel, message.
const DELETE_ENTRIES = new RedisScript(`
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
`);

// SET NX PX takes the lock; the value is owner:fence, the fence one more than the last one granted on this
// store, so every grant is unique and ordered. KEYS: lock, fence counter. ARGV: owner, ttl. Returns the fence or 0.
const TRY_LOCK = new RedisScript(`
local fence = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
if redis.call('SET', KEYS[1], ARGV[1] .. ':' .. fence, 'NX', 'PX', ARGV[2]) then
  redis.call('SET', KEYS[2], fence)
  return fence
end
return 0
`);

// KEYS: lock. ARGV: token, ttl. Extends the lock only while the token still holds it.
const EXTEND_LOCK = new RedisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`);

// Fenced completion of a load. KEYS: value, lock. ARGV: token, payload ('' for none), px, channel, message.
const SET_IF_LOCKED = new RedisScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
`);

/** A broadcast: `o` the origin, `i` the keys that changed, `u` the keys whose load lock was released. */
interface BusMessage {
  o: string;
  i: string[];
  u: string[];
}

// An entry is "<freshUntil> <staleUntil> <kind>\n<encoded value>": kind 0 a value, 1 negative undefined,
// 2 negative null. The header keeps the deadlines readable without decoding the value.
function encodeEntry(entry: CacheEntry, codec: ValueCodec): string {
  const kind = entry.negative ? (entry.value === null ? 2 : 1) : 0;
  return `${entry.freshUntil} ${entry.staleUntil} ${kind}\n${kind === 0 ? codec.encode(entry.value) : ''}`;
}

function decodeEntry(text: string, codec: ValueCodec): CacheEntry | undefined {
  const newline = text.indexOf('\n');
  if (newline < 0) return undefined;
  const [fresh, stale, kind] = text.slice(0, newline).split(' ');
  const freshUntil = Number(fresh);
  const staleUntil = Number(stale);
  if (!Number.isFinite(freshUntil) || !Number.isFinite(staleUntil)) return undefined;
  if (kind === '1') return { value: undefined, freshUntil, staleUntil, negative: true };
  if (kind === '2') return { value: null, freshUntil, staleUntil, negative: true };
  return { value: codec.decode(text.slice(newline + 1)), freshUntil, staleUntil };
}

// ioredis is an optional peer, loaded only when the store opens a client of its own: the package imports without it.
const require = createRequire(import.meta.url);

function openClient(url: string): Redis {
  const { Redis } = require('ioredis') as typeof import('ioredis');
  return new Redis(url, { lazyConnect: false });
}

function looksLikeIoredis(client: unknown): client is Redis {
  const c = client as Record<string, unknown> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    ['get', 'evalsha', 'eval', 'duplicate', 'subscribe', 'on'].every((m) => typeof c[m] === 'function')
  );
}

/** Milliseconds Redis keeps an entry: until `staleUntil`, at least 1. */
const pxOf = (entry: CacheEntry, now: number) => Math.max(1, Math.ceil(entry.staleUntil - now));

/**
 * The shared tier on Redis: entries as strings with PX expiry, per-key load locks (SET NX PX with an owner
 * token and a fence; they lapse if the holder dies), and one pub/sub channel that carries invalidations and
 * lock releases to every instance. Expiry is also checked against the caller's clock on read, so the
 * logical deadline is the same on every adapter. Multi-key scripts: a single Redis node, not a cluster.
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis';
  readonly #client: Redis;
  readonly #ownsClient: boolean;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #codec: ValueCodec;
  readonly #waiters: LockWaiters;
  readonly #owner = randomId();
  #listeners: ((message: InvalidationMessage) => void)[] = [];
  #subscriber: Redis | undefined;
  #subscribed: Promise<void> | undefined;
  #closed = false;

  constructor(options: RedisCacheStoreOptions) {
    assertObject('options', options as unknown);
    if ((options.client === undefined) === (options.url === undefined))
      throw new InvalidOptionsError('client', 'give exactly one of client and url');
    // Duck-typed: an app may hold a client from another copy of ioredis than ours.
    if (options.client !== undefined && !looksLikeIoredis(options.client))
      throw new InvalidOptionsError('client', 'expected an ioredis Redis client');
    if (options.url !== undefined && typeof options.url !== 'string')
      throw new InvalidOptionsError('url', 'expected a string');
    const prefix = options.keyPrefix ?? 'stratus:cache:';
    if (typeof prefix !== 'string') throw new InvalidOptionsError('keyPrefix', 'expected a string');
    const codec = options.codec ?? jsonCodec;
    if (typeof codec?.encode !== 'function' || typeof codec.decode !== 'function')
      throw new InvalidOptionsError('codec', 'expected { encode, decode } functions');
    this.#ownsClient = options.client === undefined;
    this.#client = options.client ?? openClient(options.url as string);
    if (this.#ownsClient) this.#client.on('error', () => {});
    this.#prefix = prefix;
    this.#channel = `${prefix}bus`;
    this.#codec = codec;
    this.#waiters = new LockWaiters(options.clock ?? systemClock);
  }

  async get(key: string, now: number): Promise<CacheEntry | undefined> {
    const text = await this.#client.get(this.#valueKey(key));
    if (text === null) return undefined;
    const entry = decodeEntry(text, this.#codec);
    return entry !== undefined && entry.staleUntil > now ? entry : undefined;
  }

  async set(key: string, entry: CacheEntry, now: number, options: WriteOptions): Promise<void> {
    await SET_ENTRY.run(
      this.#client,
      [this.#valueKey(key), this.#lockKey(key)],
      [
        encodeEntry(entry, this.#codec),
        pxOf(entry, now),
        this.#channel,
        this.#message(options, options.invalidate === false ? [] : [key], [key]),
      ],
    );
  }

  async delete(keys: readonly string[], options: WriteOptions): Promise<void> {
    if (keys.length === 0) return;
    const redisKeys: string[] = [];
    for (const key of keys) redisKeys.push(this.#valueKey(key), this.#lockKey(key));
    await DELETE_ENTRIES.run(this.#client, redisKeys, [
      this.#channel,
      this.#message(options, [...keys], [...keys]),
    ]);
  }

  async tryLock(key: string, ttlMs: number): Promise<CacheLock | undefined> {
    const fence = Number(
      await TRY_LOCK.run(this.#client, [this.#lockKey(key), `${this.#prefix}fence`], [this.#owner, ttlMs]),
    );
    return fence > 0 ? { key, token: `${this.#owner}:${fence}`, fence } : undefined;
  }

  async extendLock(lock: CacheLock, ttlMs: number): Promise<boolean> {
    return Number(await EXTEND_LOCK.run(this.#client, [this.#lockKey(lock.key)], [lock.token, ttlMs])) === 1;
  }

  async setIfLocked(
    lock: CacheLock,
    entry: CacheEntry | undefined,
    now: number,
    options: WriteOptions,
  ): Promise<boolean> {
    const written = await SET_IF_LOCKED.run(
      this.#client,
      [this.#valueKey(lock.key), this.#lockKey(lock.key)],
      [
        lock.token,
        entry === undefined ? '' : encodeEntry(entry, this.#codec),
        entry === undefined ? 1 : pxOf(entry, now),
        this.#channel,
        this.#message(options, entry === undefined || options.invalidate === false ? [] : [lock.key], [
          lock.key,
        ]),
      ],
    );
    return Number(written) === 1;
  }

  waitForUnlock(key: string, timeoutMs: number): Promise<void> {
    // Subscribe on first need; until the subscription is live the bounded timeout is the wake-up.
    this.ready().catch(() => {});
    return this.#waiters.wait(key, timeoutMs);
  }

  ready(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#subscribed ??= this.#subscribe();
    return this.#subscribed;
  }

  onInvalidation(listener: (message: InvalidationMessage) => void): Unsubscribe {
    this.#listeners = [...this.#listeners, listener];
    this.ready().catch(() => {});
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#waiters.notifyAll();
    const subscriber = this.#subscriber;
    this.#subscriber = undefined;
    subscriber?.disconnect();
    if (this.#ownsClient) this.#client.disconnect();
  }

  #valueKey(key: string): string {
    return `${this.#prefix}v:${key}`;
  }

  #lockKey(key: string): string {
    return `${this.#prefix}l:${key}`;
  }

  #message(options: WriteOptions, invalidated: string[], unlocked: string[]): string {
    const message: BusMessage = { o: options.origin, i: invalidated, u: unlocked };
    return JSON.stringify(message);
  }

  async #subscribe(): Promise<void> {
    // Whatever the app's client does when Redis is away (fail fast, say), the subscription waits for it.
    const subscriber = this.#client.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.#subscriber = subscriber;
    // The bounded poll covers a lost subscription: connection errors here are not worth crashing for.
    subscriber.on('error', () => {});
    let subscribedOnce = false;
    subscriber.on('ready', () => {
      // After a reconnect, messages sent while we were away are lost: tell listeners every key may have changed.
      if (subscribedOnce) this.#deliver({ origin: '', keys: [], all: true });
    });
    subscriber.on('message', (channel: string, text: string) => {
      if (channel !== this.#channel) return;
      let message: BusMessage;
      try {
        message = JSON.parse(text) as BusMessage;
      } catch {
        return; // not ours: someone else published on the channel
      }
      if (Array.isArray(message.u)) for (const key of message.u) this.#waiters.notify(String(key));
      if (Array.isArray(message.i) && message.i.length > 0)
        this.#deliver({ origin: String(message.o), keys: message.i.map(String) });
    });
    await subscriber.subscribe(this.#channel);
    subscribedOnce = true;
  }

  #deliver(message: InvalidationMessage): void {
    for (const listener of this.#listeners) listener(message);
  }
}
