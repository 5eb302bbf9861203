import { assertObject, InvalidOptionsError } from '@stratus/core';
import type { Cluster, Redis } from 'ioredis';
import {
  type AcquireRequest,
  type AcquireResult,
  checkAcquireRequest,
  checkHeldLease,
  type LeaseGrant,
  type LeaseHolder,
  type LeaseStore,
} from './lease-store.js';

export interface RedisLeaseStoreOptions {
  /** Your ioredis client (a Redis or a Cluster); the store never closes it. */
  readonly client: Redis | Cluster;
  /** Prefix of every key; default 'stratus:lease:'. */
  readonly prefix?: string;
}

// Keys of one lease share a hash tag (one cluster slot): KEYS[1] a sorted set of holders scored by expiry,
// KEYS[2] a hash of holder -> token, KEYS[3] the last token (kept for ever, so tokens never repeat). Times travel
// as strings and go to Redis as they came: Lua would print numbers with 14 digits, losing a millisecond epoch's
// fraction.
const PRUNE = `
local function prune(now)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    redis.call('HDEL', KEYS[2], unpack(expired))
  end
end
`;

// ARGV: owner, expiresAt, now, limit. Returns {1, token, renewed} or {0, owner, token, expiresAt, ...}.
const ACQUIRE = `${PRUNE}
prune(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return {1, redis.call('HGET', KEYS[2], ARGV[1]), 1}
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  local held = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  local out = {0}
  for i = 1, #held, 2 do
    out[#out + 1] = held[i]
    out[#out + 1] = redis.call('HGET', KEYS[2], held[i])
    out[#out + 1] = held[i + 1]
  end
  return out
end
local token = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], token)
return {1, tostring(token), 0}
`;

// ARGV: owner, token, expiresAt, now. Returns 1 when renewed.
const RENEW = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) <= tonumber(ARGV[4]) or redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`;

// ARGV: owner, token. Returns 1 when released.
const RELEASE = `
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

/** Leases in Redis: one script call per operation, atomic on the server. */
export class RedisLeaseStore implements LeaseStore {
  readonly kind = 'redis';
  readonly client: Redis | Cluster;
  readonly prefix: string;
  readonly #acquire: Script;
  readonly #renew: Script;
  readonly #release: Script;

  constructor(options: RedisLeaseStoreOptions) {
    assertObject('options', options as unknown);
    const { client, prefix = 'stratus:lease:' } = options;
    if (typeof (client as { defineCommand?: unknown })?.defineCommand !== 'function') {
      throw new InvalidOptionsError('client', 'expected an ioredis client (Redis or Cluster)');
    }
    if (typeof prefix !== 'string') throw new InvalidOptionsError('prefix', 'expected a string');
    this.client = client;
    this.prefix = prefix;
    this.#acquire = this.#script('stratusLeaseAcquire', ACQUIRE);
    this.#renew = this.#script('stratusLeaseRenew', RENEW);
    this.#release = this.#script('stratusLeaseRelease', RELEASE);
  }

  /** An EVALSHA-backed command (ioredis sends the script once per connection, then calls it by its SHA). */
  #script(name: string, lua: string): Script {
    const commands = this.client as unknown as Record<string, Script | undefined>;
    if (typeof commands[name] !== 'function') this.client.defineCommand(name, { numberOfKeys: 3, lua });
    return (commands[name] as Script).bind(this.client);
  }

  #keys(name: string): [string, string, string] {
    const base = `${this.prefix}{${name}}`;
    return [`${base}:holders`, `${base}:tokens`, `${base}:last`];
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const limit = checkAcquireRequest(request);
    const { name, owner, ttlMs, now } = request;
    const expiresAt = now + ttlMs;
    const reply = (await this.#acquire(
      ...this.#keys(name),
      owner,
      String(expiresAt),
      String(now),
      limit,
    )) as (string | number)[];
    if (reply[0] === 1) {
      return {
        acquired: true,
        renewed: reply[2] === 1,
        grant: { name, owner, token: Number(reply[1]), expiresAt },
      };
    }
    const holders: LeaseHolder[] = [];
    for (let i = 1; i < reply.length; i += 3) {
      holders.push({ owner: String(reply[i]), token: Number(reply[i + 1]), expiresAt: Number(reply[i + 2]) });
    }
    return { acquired: false, holders };
  }

  async renew(
    name: string,
    owner: string,
    token: number,
    ttlMs: number,
    now: number,
  ): Promise<LeaseGrant | undefined> {
    checkHeldLease(name, owner, token, ttlMs, now);
    const expiresAt = now + ttlMs;
    const renewed = await this.#renew(
      ...this.#keys(name),
      owner,
      String(token),
      String(expiresAt),
      String(now),
    );
    return renewed === 1 ? { name, owner, token, expiresAt } : undefined;
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    checkHeldLease(name, owner, token);
    return (await this.#release(...this.#keys(name), owner, String(token))) === 1;
  }

  async holders(name: string, now: number): Promise<LeaseHolder[]> {
    const [holdersKey, tokensKey] = this.#keys(name);
    const held = await this.client.zrangebyscore(holdersKey, `(${now}`, '+inf', 'WITHSCORES');
    if (held.length === 0) return [];
    const owners = held.filter((_, i) => i % 2 === 0);
    const tokens = await this.client.hmget(tokensKey, ...owners);
    return owners.map((owner, i) => ({
      owner,
      token: Number(tokens[i]),
      expiresAt: Number(held[2 * i + 1]),
    }));
  }
}
