// The Redis backend's link to the server: its client (given or opened from a URL), its keys, and running scripts.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { UnknownQueueError } from '../errors.js';
import type { Argument } from './encoding.js';
import { FUNCTION_NAMES, LIBRARY } from './library.js';
import type { RedisBackendSetup } from './options.js';
import { SCRIPTS, type ScriptName } from './scripts.js';

/** A script reply. */
export type Reply = Buffer | number | null | Reply[];

class Script {
  readonly sha: string;
  constructor(readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }
}

const scripts = Object.fromEntries(
  Object.entries(SCRIPTS).map(([name, lua]) => [name, new Script(lua)]),
) as Record<ScriptName, Script>;

/**
 * Whether the scripts run as functions of the library (FCALL): not yet known until the first call tries to load
 * it; 'unavailable' on servers without functions (before Redis 7) or where FUNCTION is not allowed, which run
 * them by EVALSHA.
 */
type LibraryState = 'unknown' | 'loaded' | 'unavailable';

export class RedisConnection {
  readonly keyPrefix: string;
  readonly #url: string | undefined;
  #client: Redis | undefined;
  #connecting: Promise<Redis> | undefined;
  #library: LibraryState = 'unknown';
  #loading: Promise<LibraryState> | undefined;

  constructor(setup: RedisBackendSetup) {
    this.#client = setup.client;
    this.#url = setup.url;
    this.keyPrefix = setup.keyPrefix;
  }

  key(name: string): string {
    return this.keyPrefix + name;
  }

  /** The meta key of a queue; the scripts derive its other keys from it (same hash tag, same slot). */
  queueKey(queue: string): string {
    return `${this.keyPrefix}q:{${queue}}:m`;
  }

  /** The scripts publish on `<queue key base>n`; ioredis prefixes keys, not channels, with its own keyPrefix. */
  channel(queue: string): string {
    const clientPrefix = this.#client?.options.keyPrefix ?? '';
    return `${clientPrefix}${this.keyPrefix}q:{${queue}}:n`;
  }

  async client(): Promise<Redis> {
    if (this.#client !== undefined) return this.#client;
    this.#connecting ??= (async () => {
      const { Redis } = await import('ioredis');
      const client = new Redis(this.#url as string);
      // Failures surface through the commands; a dropped connection is retried by ioredis.
      client.on('error', () => {});
      this.#client = client;
      return client;
    })();
    return this.#connecting;
  }

  async runOnQueue(name: ScriptName, queue: string, args: Argument[]): Promise<Reply> {
    return this.run(name, [this.queueKey(queue)], args, queue);
  }

  async run(name: ScriptName, keys: string[], args: Argument[], queue?: string): Promise<Reply> {
    const client = await this.client();
    const tail: Argument[] = [String(keys.length), ...keys, ...args];
    try {
      if (this.#library !== 'unavailable') {
        if (this.#library === 'unknown') await this.#load(client);
        const reply = await this.#callFunction(client, name, tail);
        if (reply !== undefined) return reply;
      }
      const script = scripts[name];
      try {
        return (await client.callBuffer('EVALSHA', [script.sha, ...tail])) as Reply;
      } catch (error) {
        if (!isScriptError(error, 'NOSCRIPT')) throw error;
        return (await client.callBuffer('EVAL', [script.lua, ...tail])) as Reply;
      }
    } catch (error) {
      if (queue !== undefined && isScriptError(error, 'STRATUS_UNKNOWN_QUEUE'))
        throw new UnknownQueueError(queue);
      throw error;
    }
  }

  /** FCALL, loading the library again when the server lost it (FUNCTION FLUSH, a restart without persistence). */
  async #callFunction(client: Redis, name: ScriptName, tail: Argument[]): Promise<Reply | undefined> {
    if (this.#library !== 'loaded') return undefined;
    const call = () => client.callBuffer('FCALL', [FUNCTION_NAMES[name], ...tail]) as Promise<Reply>;
    try {
      return await call();
    } catch (error) {
      if (!isScriptError(error, 'Function not found')) throw error;
      this.#library = 'unknown';
      return (await this.#load(client)) === 'loaded' ? await call() : undefined;
    }
  }

  /** Loads the library once for concurrent callers; a failure other than "not supported" is retried next call. */
  async #load(client: Redis): Promise<LibraryState> {
    this.#loading ??= (async (): Promise<LibraryState> => {
      try {
        await client.call('FUNCTION', 'LOAD', LIBRARY);
        this.#library = 'loaded';
      } catch (error) {
        if (isScriptError(error, 'already exists')) this.#library = 'loaded';
        else if (isScriptError(error, 'unknown command') || isScriptError(error, 'NOPERM'))
          this.#library = 'unavailable';
        else throw error;
      } finally {
        this.#loading = undefined;
      }
      return this.#library;
    })();
    return this.#loading;
  }

  /** Closes the client if the backend opened it (from a URL). */
  async close(): Promise<void> {
    if (this.#url !== undefined) {
      const own = this.#client ?? (await this.#connecting?.catch(() => undefined));
      await quit(own);
    }
  }
}

export function isScriptError(error: unknown, code: string): boolean {
  return error instanceof Error && error.message.includes(code);
}

export async function quit(client: Redis | undefined): Promise<void> {
  if (client === undefined) return;
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
