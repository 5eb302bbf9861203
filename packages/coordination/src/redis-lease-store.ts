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

// The keys of a lease share its hash tag (one cluster slot) and derive from the one key a script is given, its base
// (as the message backend's scripts do): fewer arguments to build, send and parse on every call. A lease of one
// holder (a mutex, a leadership: the common case) lives in <base>:holder, a string '<token> <expiresAt> <owner>':
// a grant there costs a GET and a SET. A semaphore's holders live in <base>:holders, a sorted set scored by expiry,
// with <base>:tokens a hash of holder -> token. The two layouts of a name never hold live holders at once (see
// ACQUIRE). <base>:last holds the last token of either layout, kept for ever so that tokens never repeat. Times
// travel as strings and go to Redis as they came: Lua would print numbers with 14 digits, losing a millisecond
// epoch's fraction.
// Reads the single holder, if any, into `one`.
const HOLDER = `
local holder = KEYS[1] .. ':holder'
local one = redis.call('GET', holder)
if one then
  local token, expires, owner = string.match(one, '^(%d+) (%S+) (.*)$')
  one = {owner = owner, token = token, expires = expires}
end
`;
// The semaphore layout's keys and helpers: only scripts that go past the single holder pay for them.
const SEMAPHORE = `
local holders, tokens = KEYS[1] .. ':holders', KEYS[1] .. ':tokens'
local function prune(now)
  local expired = redis.call('ZRANGEBYSCORE', holders, '-inf', now)
  if #expired > 0 then
    redis.call('ZREMRANGEBYSCORE', holders, '-inf', now)
    redis.call('HDEL', tokens, unpack(expired))
  end
end
-- Appends owner, token and expiry of each holder of a ZRANGE ... WITHSCORES reply to out.
local function list(out, held)
  for i = 1, #held, 2 do
    out[#out + 1] = held[i]
    out[#out + 1] = redis.call('HGET', tokens, held[i])
    out[#out + 1] = held[i + 1]
  end
  return out
end
`;

// ARGV: owner, expiresAt, now, limit. Returns the token of a new grant, minus the token of a renewed one (a number
// is cheaper to send and read than an array), or when refused {owner, token, expiresAt, ...} of the holders.
// A limit of 1 takes the single-holder layout unless a semaphore's holders are there; any other limit first moves
// a live single holder into the sorted set, so a name acquired with both limits still counts everyone.
const ACQUIRE = `${HOLDER}
if ARGV[4] == '1' and (one or redis.call('EXISTS', KEYS[1] .. ':holders') == 0) then
  if one and tonumber(one.expires) > tonumber(ARGV[3]) then
    if one.owner ~= ARGV[1] then return {one.owner, one.token, one.expires} end
    redis.call('SET', holder, one.token .. ' ' .. ARGV[2] .. ' ' .. ARGV[1])
    return -tonumber(one.token)
  end
  local token = redis.call('INCR', KEYS[1] .. ':last')
  redis.call('SET', holder, token .. ' ' .. ARGV[2] .. ' ' .. ARGV[1])
  return token
end
${SEMAPHORE}
if one then
  redis.call('DEL', holder)
  if tonumber(one.expires) > tonumber(ARGV[3]) then
    redis.call('ZADD', holders, one.expires, one.owner)
    redis.call('HSET', tokens, one.owner, one.token)
  end
end
prune(ARGV[3])
if redis.call('ZSCORE', holders, ARGV[1]) then
  redis.call('ZADD', holders, ARGV[2], ARGV[1])
  return -tonumber(redis.call('HGET', tokens, ARGV[1]))
end
if redis.call('ZCARD', holders) >= tonumber(ARGV[4]) then
  return list({}, redis.call('ZRANGE', holders, 0, -1, 'WITHSCORES'))
end
local token = redis.call('INCR', KEYS[1] .. ':last')
redis.call('ZADD', holders, ARGV[2], ARGV[1])
redis.call('HSET', tokens, ARGV[1], token)
return token
`;

// ARGV: owner, token, expiresAt, now. Returns 1 when renewed.
const RENEW = `${HOLDER}
if one and one.owner == ARGV[1] and one.token == ARGV[2] then
  if tonumber(one.expires) <= tonumber(ARGV[4]) then return 0 end
  redis.call('SET', holder, one.token .. ' ' .. ARGV[3] .. ' ' .. ARGV[1])
  return 1
end
${SEMAPHORE}
local score = redis.call('ZSCORE', holders, ARGV[1])
if not score or tonumber(score) <= tonumber(ARGV[4]) or redis.call('HGET', tokens, ARGV[1]) ~= ARGV[2] then
  return 0
end
redis.call('ZADD', holders, ARGV[3], ARGV[1])
return 1
`;

// ARGV: owner, token. Returns 1 when released.
const RELEASE = `${HOLDER}
if one and one.owner == ARGV[1] and one.token == ARGV[2] then
  redis.call('DEL', holder)
  return 1
end
${SEMAPHORE}
if redis.call('HGET', tokens, ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', tokens, ARGV[1])
redis.call('ZREM', holders, ARGV[1])
return 1
`;

// ARGV: now. Returns {owner, token, expiresAt, ...} of the live holders of both layouts.
const LIST = `${HOLDER}${SEMAPHORE}
local out = {}
if one and tonumber(one.expires) > tonumber(ARGV[1]) then out = {one.owner, one.token, one.expires} end
return list(out, redis.call('ZRANGEBYSCORE', holders, '(' .. ARGV[1], '+inf', 'WITHSCORES'))
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
  readonly #list: Script;

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
    this.#list = this.#script('stratusLeaseList', LIST);
  }

  /** An EVALSHA-backed command (ioredis sends the script once per connection, then calls it by its SHA). */
  #script(name: string, lua: string): Script {
    const commands = this.client as unknown as Record<string, Script | undefined>;
    if (typeof commands[name] !== 'function') this.client.defineCommand(name, { numberOfKeys: 1, lua });
    return (commands[name] as Script).bind(this.client);
  }

  #base(name: string): string {
    return `${this.prefix}{${name}}`;
  }

  async acquire(request: AcquireRequest): Promise<AcquireResult> {
    const limit = checkAcquireRequest(request);
    const { name, owner, ttlMs, now } = request;
    const expiresAt = now + ttlMs;
    const reply = (await this.#acquire(
      this.#base(name),
      owner,
      String(expiresAt),
      String(now),
      String(limit),
    )) as number | string[];
    if (typeof reply === 'number') {
      return {
        acquired: true,
        renewed: reply < 0,
        grant: { name, owner, token: Math.abs(reply), expiresAt },
      };
    }
    return { acquired: false, holders: holdersOf(reply) };
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
    const renewed = await this.#renew(this.#base(name), owner, String(token), String(expiresAt), String(now));
    return renewed === 1 ? { name, owner, token, expiresAt } : undefined;
  }

  async release(name: string, owner: string, token: number): Promise<boolean> {
    checkHeldLease(name, owner, token);
    return (await this.#release(this.#base(name), owner, String(token))) === 1;
  }

  async holders(name: string, now: number): Promise<LeaseHolder[]> {
    const reply = (await this.#list(this.#base(name), String(now))) as string[];
    return holdersOf(reply).sort((a, b) => a.expiresAt - b.expiresAt);
  }
}

/** Reads the {owner, token, expiresAt} triples of a script's reply. */
function holdersOf(reply: readonly string[]): LeaseHolder[] {
  const holders: LeaseHolder[] = [];
  for (let i = 0; i < reply.length; i += 3) {
    holders.push({ owner: String(reply[i]), token: Number(reply[i + 1]), expiresAt: Number(reply[i + 2]) });
  }
  return holders;
}
