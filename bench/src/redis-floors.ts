/**
 * What one round trip to the run's Redis costs through each client, without any queue or lock: the floors to read
 * the Redis rows against. A script is `return 1`, so its Redis time is the call itself. ioredis is the client of
 * Stratus, BullMQ, redlock and redis-semaphore; node-redis 3 is bee-queue's own (loaded from bee-queue's install).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

const COUNT = 5_000;

/** What the floors are, for the results file. */
export const REDIS_FLOORS =
  'one round trip to the same Redis, no queue or lock: PING, SET PX, and EVALSHA of `return 1` (one key, ' +
  'three short arguments; or one key and the payload) through ioredis (the client of Stratus, BullMQ, redlock, ' +
  "redis-semaphore) and node-redis 3 (bee-queue's own), ops/s";
const NOOP = 'return 1';
const NOOP_SHA = createHash('sha1').update(NOOP).digest('hex');

export interface RedisFloors {
  /** ioredis PING. */
  readonly ioredisPingPerSec: number;
  /** ioredis `SET key value PX 10000`: redis-semaphore's acquire without the contention. */
  readonly ioredisSetPerSec: number;
  /** ioredis EVALSHA of a no-op script with one key and three short arguments: a fenced lock call's floor. */
  readonly ioredisScriptPerSec: number;
  /** ioredis EVALSHA of the no-op script with one key and the payload as argument: a one-script send's floor. */
  readonly ioredisScriptPayloadPerSec: number;
  /** The same two through node-redis 3, bee-queue's client. */
  readonly nodeRedis3PingPerSec: number;
  readonly nodeRedis3ScriptPayloadPerSec: number;
}

async function rate(op: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2_000; i++) await op();
  const start = performance.now();
  for (let i = 0; i < COUNT; i++) await op();
  return Math.round((COUNT / (performance.now() - start)) * 1000);
}

interface NodeRedis3Client {
  send_command(
    command: string,
    args: unknown[],
    callback: (error: Error | null, reply: unknown) => void,
  ): void;
  quit(callback?: () => void): void;
  end(flush: boolean): void;
  on(event: 'error', listener: (error: Error) => void): void;
}

function nodeRedis3(url: string): NodeRedis3Client {
  const requireFromBee = createRequire(createRequire(import.meta.url).resolve('bee-queue'));
  const { createClient } = requireFromBee('redis') as { createClient(url: string): NodeRedis3Client };
  const client = createClient(url);
  client.on('error', () => {});
  return client;
}

function call(client: NodeRedis3Client, command: string, args: unknown[]): Promise<unknown> {
  return new Promise((resolve, reject) =>
    client.send_command(command, args, (error, reply) => (error ? reject(error) : resolve(reply))),
  );
}

/** `payload`: the argument of the payload script (the suite's job, as JSON). */
export async function measureRedisFloors(url: string, payload: string): Promise<RedisFloors> {
  const key = `bench:floor:${process.pid}`;
  const io = new Redis(url, { lazyConnect: true, connectTimeout: 5_000, maxRetriesPerRequest: 1 });
  const old = nodeRedis3(url);
  try {
    await io.connect();
    await io.script('LOAD', NOOP);
    const floors: RedisFloors = {
      ioredisPingPerSec: await rate(() => io.ping()),
      ioredisSetPerSec: await rate(() => io.set(key, 'owner', 'PX', 10_000)),
      ioredisScriptPerSec: await rate(() => io.evalsha(NOOP_SHA, 1, key, 'owner', '1795886022258', '1')),
      ioredisScriptPayloadPerSec: await rate(() => io.evalsha(NOOP_SHA, 1, key, payload)),
      nodeRedis3PingPerSec: await rate(() => call(old, 'PING', [])),
      nodeRedis3ScriptPayloadPerSec: await rate(() => call(old, 'EVALSHA', [NOOP_SHA, 1, key, payload])),
    };
    await io.del(key);
    return floors;
  } finally {
    io.disconnect();
    // quit's callback never comes when the connection never came: end it after a second either way.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1_000);
      old.quit(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    old.end(true);
  }
}
