import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run by its SHA1 (EVALSHA), falling back to sending its text once the server says NOSCRIPT (a
 * restarted or flushed server), so callers never load scripts themselves.
 */
export class RedisScript {
  readonly #source: string;
  readonly #sha: string;

  constructor(source: string) {
    this.#source = source;
    this.#sha = createHash('sha1').update(source).digest('hex');
  }

  async run(client: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await client.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!String((error as Error | undefined)?.message).startsWith('NOSCRIPT')) throw error;
      return client.eval(this.#source, keys.length, ...keys, ...args);
    }
  }
}
