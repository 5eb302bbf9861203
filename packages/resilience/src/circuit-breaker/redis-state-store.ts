import type { Redis } from 'ioredis';
import { KeyedListeners } from './keyed-listeners.js';
import {
  type CircuitStateStore,
  type CompareAndSetResult,
  parseCircuitRecord,
  type QuorumReport,
  type SharedCircuitRecord,
  type SharedCircuitState,
} from './state-store.js';

export interface RedisCircuitStateStoreOptions {
  /** Your ioredis client; the store never closes it. */
  client: Redis;
  /** Prefix of every key and channel the store uses; default "stratus:circuit:". */
  keyPrefix?: string;
}

// One hash per circuit: v = version, d = state JSON. The version check and the write happen in one script,
// and the change is published from the same script, so subscribers never see a write that did not happen.
const COMPARE_AND_SET = `
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  local d = redis.call('HGET', KEYS[1], 'd')
  if d then return {0, v, d} end
  return {0, v}
end
v = v + 1
redis.call('HSET', KEYS[1], 'v', v, 'd', ARGV[2])
redis.call('PUBLISH', ARGV[3], v .. ' ' .. ARGV[2])
return {1, v, ARGV[2]}
`;

// One hash per circuit of instance id -> report JSON. Expired reports are dropped on every report, and the
// hash itself expires with its longest-lived report, so a circuit nobody reports on leaves nothing behind.
const REPORT = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local now = tonumber(ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
local live = {}
local last = 0
for i = 1, #all, 2 do
  local expires = tonumber(cjson.decode(all[i + 1]).expiresAt)
  if expires <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    live[#live + 1] = all[i + 1]
    if expires > last then last = expires end
  end
end
if last > now then redis.call('PEXPIRE', KEYS[1], math.ceil(last - now)) else redis.call('DEL', KEYS[1]) end
return live
`;

/**
 * Shared circuit state on Redis: atomic Lua compare-and-set per circuit, quorum reports in a hash with
 * expiry, and pub/sub (on a duplicate of your client, opened on first subscribe) for prompt propagation.
 */
export class RedisCircuitStateStore implements CircuitStateStore {
  readonly kind = 'redis';
  readonly #client: Redis;
  readonly #prefix: string;
  #subscriber: Redis | undefined;
  readonly #listeners = new KeyedListeners();

  constructor(options: RedisCircuitStateStoreOptions) {
    this.#client = options.client;
    this.#prefix = options.keyPrefix ?? 'stratus:circuit:';
  }

  async read(key: string): Promise<SharedCircuitRecord | undefined> {
    const [version, data] = await this.#client.hmget(this.#stateKey(key), 'v', 'd');
    return version && data ? parseCircuitRecord(version, data) : undefined;
  }

  async compareAndSet(
    key: string,
    expectedVersion: number,
    state: SharedCircuitState,
  ): Promise<CompareAndSetResult> {
    const [written, version, data] = (await this.#client.eval(
      COMPARE_AND_SET,
      1,
      this.#stateKey(key),
      expectedVersion,
      JSON.stringify(state),
      this.#channel(key),
    )) as [number, number, string | undefined];
    return {
      written: written === 1,
      record: data === undefined ? undefined : parseCircuitRecord(version, data),
    };
  }

  async report(key: string, report: QuorumReport, now: number): Promise<readonly QuorumReport[]> {
    const live = (await this.#client.eval(
      REPORT,
      1,
      `${this.#prefix}quorum:${key}`,
      report.instanceId,
      JSON.stringify(report),
      now,
    )) as string[];
    return live.map((json) => JSON.parse(json) as QuorumReport);
  }

  async subscribe(
    key: string,
    listener: (record: SharedCircuitRecord) => void,
  ): Promise<() => Promise<void>> {
    const channel = this.#channel(key);
    const subscriber = this.#subscriberConnection();
    const first = !this.#listeners.has(channel);
    const remove = this.#listeners.add(channel, listener);
    if (first) {
      try {
        await subscriber.subscribe(channel);
      } catch (error) {
        remove();
        throw error;
      }
    }
    return async () => {
      if (!remove()) return;
      await subscriber.unsubscribe(channel);
      if (this.#listeners.keyCount === 0 && this.#subscriber === subscriber) {
        this.#subscriber = undefined;
        await subscriber.quit();
      }
    };
  }

  #channel(key: string): string {
    return `${this.#prefix}changes:${key}`;
  }

  // The kind leads the key name, so no circuit name (say "x:quorum") can land on another circuit's keys.
  #stateKey(key: string): string {
    return `${this.#prefix}state:${key}`;
  }

  #subscriberConnection(): Redis {
    if (this.#subscriber === undefined) {
      const subscriber = this.#client.duplicate();
      // Polling covers a lost subscription, so connection errors here are not worth crashing for.
      subscriber.on('error', () => {});
      subscriber.on('message', (channel: string, message: string) => {
        if (!this.#listeners.has(channel)) return;
        let record: SharedCircuitRecord;
        try {
          const space = message.indexOf(' ');
          record = parseCircuitRecord(message.slice(0, space), message.slice(space + 1));
        } catch {
          return; // not ours: someone else published on the channel
        }
        for (const listener of this.#listeners.of(channel)) listener(record);
      });
      this.#subscriber = subscriber;
    }
    return this.#subscriber;
  }
}
