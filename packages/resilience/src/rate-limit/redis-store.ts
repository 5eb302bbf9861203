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

export interface RedisRateLimitStoreOptions {
  /** An ioredis client (or cluster) you own: the store never connects, quits or reconfigures it. */
  client: Redis | Cluster;
  /**
   * Prepended to every key; a limiter's keys are `<prefix><algorithm>:<limiter name>:<key>` (the algorithm
   * keeps limiters of one name but different algorithms apart, as PostgreSQL's table per algorithm does).
   * Default 'stratus:rl:'.
   */
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
export class RedisRateLimitStore implements RateLimitStore {
  readonly kind = 'redis';
  readonly client: Redis | Cluster;
  readonly prefix: string;
  readonly #clock: Clock | undefined;

  constructor(options: RedisRateLimitStoreOptions) {
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

  /** The caller's time when the store runs on a Clock; undefined when the server's clock is used. */
  get clock(): Clock | undefined {
    return this.#clock;
  }

  /**
   * The function running `body` behind `prologue` as a custom command of the client (defined once per
   * client and script), in its Buffer flavour: replies are packed doubles, wanted as bytes, not as text.
   */
  command(label: string, prologue: string, body: string): ScriptCommand {
    const source = prologue + body;
    const digest = createHash('sha1').update(source).digest('hex').slice(0, 16);
    const name = `stratusRateLimit_${label.replace(/\W/g, '_')}_${digest}`;
    const commands = this.client as unknown as Record<string, ScriptCommand | undefined>;
    if (typeof commands[`${name}Buffer`] !== 'function') {
      this.client.defineCommand(name, { numberOfKeys: 1, lua: source });
    }
    return (commands[`${name}Buffer`] as ScriptCommand).bind(this.client);
  }
}

type ScriptCommand = (...args: (string | number)[]) => Promise<Buffer>;

/** A number as a Lua literal that reads back as the same double. */
function luaNumber(value: number): string {
  if (!Number.isFinite(value)) throw new InvalidOptionsError('params', `cannot send ${value} to Redis`);
  return String(value);
}

/**
 * The locals every script starts with (see RedisProgram). Arguments: ARGV[1] the cost, then the caller's
 * time when the store runs on a Clock, then the lease id for leased algorithms.
 */
function prologue(options: {
  clientTime: boolean;
  time: boolean;
  lease: boolean;
  params: Record<string, number>;
}): string {
  const lines = ['local key = KEYS[1]', 'local cost = tonumber(ARGV[1])'];
  let argument = 2;
  if (options.time) {
    if (options.clientTime) lines.push(`local now = tonumber(ARGV[${argument++}])`);
    else lines.push("local clock = redis.call('TIME')", 'local now = clock[1] * 1000 + clock[2] / 1000');
  }
  if (options.lease) lines.push(`local lease = ARGV[${argument++}]`);
  for (const [name, value] of Object.entries(options.params))
    lines.push(`local ${name} = ${luaNumber(value)}`);
  return `${lines.join('\n')}\n`;
}

class RedisRateLimiter implements RateLimiter {
  readonly store = 'redis';
  readonly name: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number | undefined;
  readonly leased: boolean;
  readonly #owner: RedisRateLimitStore;
  readonly #algorithm: Algorithm<unknown>;
  readonly #observer: LimiterObserver;
  readonly #keyPrefix: string;
  readonly #acquire: ScriptCommand;
  readonly #release: ScriptCommand | undefined;

  constructor(owner: RedisRateLimitStore, algorithm: Algorithm<unknown>, options: BindOptions) {
    this.#owner = owner;
    this.#algorithm = algorithm;
    this.algorithm = algorithm.kind;
    this.limit = algorithm.limit;
    this.windowMs = algorithm.windowMs;
    this.leased = algorithm.leased;
    this.name = options.name;
    this.#observer = new LimiterObserver(options.name, options.clock, options.softLimit);
    this.#keyPrefix = `${owner.prefix}${algorithm.kind}:${options.name}:`;
    const program: RedisProgram = algorithm.redis;
    const params: Record<string, number> = {};
    program.params.forEach((name, i) => {
      params[name] = algorithm.params[i] as number;
    });
    const clientTime = owner.clock !== undefined;
    const lease = algorithm.leased;
    this.#acquire = owner.command(
      program.name,
      prologue({ clientTime, time: true, lease, params }),
      program.lua,
    );
    this.#release =
      program.releaseLua === undefined
        ? undefined
        : owner.command(
            `${program.name}_release`,
            prologue({ clientTime, time: false, lease: true, params: {} }),
            program.releaseLua,
          );
  }

  get events(): EventEmitter<RateLimiterEvent> {
    return this.#observer.events;
  }

  async acquire(key: string, cost = 1): Promise<RateLimitResult> {
    if (cost !== 1) assertCost(cost);
    const storeKey = this.#keyPrefix + key;
    const { clock } = this.#owner;
    let leaseId = '';
    let reply: Buffer;
    if (this.leased) {
      leaseId = randomId();
      reply = await (clock === undefined
        ? this.#acquire(storeKey, cost, leaseId)
        : this.#acquire(storeKey, cost, clock.now(), leaseId));
    } else {
      reply = await (clock === undefined
        ? this.#acquire(storeKey, cost)
        : this.#acquire(storeKey, cost, clock.now()));
    }
    const values: number[] = new Array(reply.length >> 3);
    for (let i = 0; i < values.length; i++) values[i] = reply.readDoubleLE(i << 3);
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
    this.#released ??= this.script(this.storeKey, this.cost, this.id).then(() => undefined);
    return this.#released;
  }
}
