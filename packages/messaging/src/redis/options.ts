// The Redis message backend's options, and their validation.
import { assertObject, InvalidOptionsError } from '@stratus/core';
import type { Redis } from 'ioredis';

export interface RedisMessageBackendOptions {
  /**
   * Your ioredis client: the backend uses it as is and never closes it; wake-ups run on a `duplicate()` of it,
   * which the backend owns. Give either `client` or `url`.
   */
  client?: Redis | undefined;
  /** A Redis URL: the backend opens (ioredis, loaded on first use) and closes its own connections. */
  url?: string | undefined;
  /** Prepended to every key and channel. Default 'stratus:'. */
  keyPrefix?: string | undefined;
}

/** The validated options: a client or a URL, and the key prefix. */
export interface RedisBackendSetup {
  readonly client: Redis | undefined;
  readonly url: string | undefined;
  readonly keyPrefix: string;
}

export function setUpRedisBackend(options: RedisMessageBackendOptions): RedisBackendSetup {
  assertObject('options', options as unknown);
  const { client, url, keyPrefix = 'stratus:' } = options;
  if ((client === undefined) === (url === undefined)) {
    throw new InvalidOptionsError('client', 'give either an ioredis client or a url');
  }
  if (client !== undefined && typeof (client as { callBuffer?: unknown }).callBuffer !== 'function') {
    throw new InvalidOptionsError('client', 'expected an ioredis Redis client');
  }
  if (url !== undefined && typeof url !== 'string') throw new InvalidOptionsError('url', 'expected a string');
  if (typeof keyPrefix !== 'string') throw new InvalidOptionsError('keyPrefix', 'expected a string');
  return { client, url, keyPrefix };
}
