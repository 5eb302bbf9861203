import { createHash } from 'node:crypto';
import { assertObject, type Clock, type EventEmitter, InvalidOptionsError, randomId } from '@stratus/core';
import type { Cluster, Redis } from 'ioredis';
import {
  type Algorithm,
  assertCost,
  type BindOptions,
  type RateLimitStore,
  type RedisProgram,
} from './algorithm.js';
import { LimiterObserver } from './observer.js';
import type { Lease, RateLimiter, RateLimiterEvent, RateLimitResult } from './types.js';

export interface RedisStoreOptions {
  /** An ioredis client (or cluster) you own: the store never connects, quits or reconfigures it. */
  client: Redis | Cluster;
  /** Prepended to every key; a limiter's keys are `<prefix><limiter name>:<key>`. Default 'stratus:rl:'. */
  prefix?: string;
  /**
   * Whose clock decides windows and refills. 'server' (default): Redis's own TIME, read inside the script,
   * so every process sees one clock and skew between application hosts cannot stretch or shrink a window.
   * A Clock: the caller's `now()`, for tests on a virtual clock, or when the Redis clock is not to be
   * trusted; processes whose clocks differ by d then disagree on window edges and refills by d (a clock
   * running behind never resets a window or mints tokens early: the scripts never move time backwards).
   */
  time?: 'server' | Clock;
}

/**
 * Counters in Redis (>= 5), shared by every process using the same prefix and limiter name. Each request is
 * one EVALSHA of the algorithm's Lua script (ioredis defineCommand: the script is sent once per connection,
 * then called by its SHA), atomic on the server; keys expire on their own once idle.
 */
export class RedisStore implements RateLimitStore {
  readonly kind = 'redis';
  readonly client: Redis | Cluster;
  readonly prefix: string;
  readonly #clock: Clock | undefined;

  constructor(options: RedisStoreOptions) {
    assertObject('options', options as unknown);
    const { client, prefix = 'stratus:rl:', time = 'server' } = options;
    if (typeof (client as { defineCommand?: unknown })?.defineCommand !== 'function') {
      throw new InvalidOptionsError('client', 'expected an ioredis client (Redis or Cluster)');
    }
    if (typeof prefix !== 'string') throw new InvalidOptionsError('prefix', 'expected a string');
    if (time !== 'server') assertObject('time', time);
    this.client = client;
    this.prefix = prefix;
    this.#clock = time === 'server' ? undefined : time;
  }

  bind(algorithm: Algorithm<unknown>, options: BindOptions): RateLimiter {
    return new RedisRateLimiter(this, algorithm, options);
  }

  /** The argument that tells a script what time it is: empty means "ask the server". */
  now(): number | string {
    return this.#clock === undefined ? '' : this.#clock.now();
  }

  /** The function calling `lua` (with the shared prologue) as a custom command of the client. */
  command(label: string, lua: string): ScriptCommand {
    const source = prologue + lua;
    const name = `stratusRateLimit_${label.replace(/\W/g, '_')}_${createHash('sha1').update(source).digest('hex').slice(0, 12)}`;
    const commands = this.client as unknown as Record<string, ScriptCommand | undefined>;
    if (typeof commands[name] !== 'function')
      this.client.defineCommand(name, { numberOfKeys: 1, lua: source });
    return (commands[name] as ScriptCommand).bind(this.client);
  }
}

export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}

type ScriptCommand = (...args: (string | number)[]) => Promise<unknown>;

/** Defines what every algorithm script may use (see RedisProgram). */
const prologue = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
if now == nil then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
end
local cost = tonumber(ARGV[2])
local lease = ARGV[3]
local function fmt(x) return string.format('%.17g', x) end
local function ttl(ms) return math.max(1, math.ceil(ms)) end
`;

class RedisRateLimiter implements RateLimiter {
  readonly store = 'redis';
  readonly name: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number | undefined;
  readonly leased: boolean;
  readonly #owner: RedisStore;
  readonly #algorithm: Algorithm<unknown>;
  readonly #observer: LimiterObserver;
  readonly #keyPrefix: string;
  readonly #acquire: ScriptCommand;
  readonly #release: ScriptCommand | undefined;
  readonly #params: readonly number[];

  constructor(owner: RedisStore, algorithm: Algorithm<unknown>, options: BindOptions) {
    this.#owner = owner;
    this.#algorithm = algorithm;
    this.algorithm = algorithm.kind;
    this.limit = algorithm.limit;
    this.windowMs = algorithm.windowMs;
    this.leased = algorithm.leased;
    this.name = options.name;
    this.#observer = new LimiterObserver(options.name, options.clock, options.softLimit);
    this.#keyPrefix = `${owner.prefix}${options.name}:`;
    this.#params = algorithm.params;
    const program: RedisProgram = algorithm.redis;
    this.#acquire = owner.command(program.name, program.lua);
    this.#release =
      program.releaseLua === undefined
        ? undefined
        : owner.command(`${program.name}_release`, program.releaseLua);
  }

  get events(): EventEmitter<RateLimiterEvent> {
    return this.#observer.events;
  }

  async acquire(key: string, cost = 1): Promise<RateLimitResult> {
    if (cost !== 1) assertCost(cost);
    const storeKey = this.#keyPrefix + key;
    const leaseId = this.#algorithm.leased ? randomId() : '';
    const reply = (await this.#acquire(
      storeKey,
      this.#owner.now(),
      cost,
      leaseId,
      ...this.#params,
    )) as unknown[];
    const values: number[] = new Array(reply.length);
    for (let i = 0; i < reply.length; i++) values[i] = Number(reply[i]);
    const lease =
      this.#release === undefined ? undefined : new RedisLease(this.#release, storeKey, leaseId, cost);
    const result = this.#algorithm.decode(values, cost, lease);
    this.#observer.observe(key, cost, result);
    return result;
  }

  async reset(key: string): Promise<void> {
    await this.#owner.client.del(this.#keyPrefix + key);
    this.#observer.forget(key);
  }
}

class RedisLease implements Lease {
  #released: Promise<void> | undefined;

  constructor(
    readonly script: ScriptCommand,
    readonly storeKey: string,
    readonly id: string,
    readonly cost: number,
  ) {}

  release(): Promise<void> {
    this.#released ??= this.script(this.storeKey, '', this.cost, this.id).then(() => undefined);
    return this.#released;
  }
}
