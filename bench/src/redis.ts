/** The Redis server the Redis cases run against: REDIS_URL when set, else a throwaway one started here. */
import { startRedis } from '@stratus/testkit';
import { Redis } from 'ioredis';

export type RedisTarget =
  | {
      readonly url: string;
      /** Where the server came from, for the results file. */
      readonly source: string;
      readonly version: string;
      /** A fresh connection (each implementation gets its own, so none queues behind another's commands). */
      connect(): Promise<Redis>;
      /** Closes the connections made here and stops the server if it was started here. */
      close(): Promise<void>;
      readonly skip: false;
    }
  | { readonly skip: string };

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));

export async function acquireRedis(
  env: Record<string, string | undefined> = process.env,
): Promise<RedisTarget> {
  let url = env.REDIS_URL;
  let source = 'REDIS_URL';
  let stopServer = async () => {};
  if (!url) {
    try {
      const server = await startRedis({ env });
      url = server.url;
      source = 'throwaway redis-server (--save "" --appendonly no) on loopback';
      stopServer = server.stop;
    } catch (error) {
      return { skip: `no REDIS_URL and no throwaway redis-server: ${describeError(error)}` };
    }
  }
  const serverUrl = url;
  const clients: Redis[] = [];
  const connect = async () => {
    const client = new Redis(serverUrl, {
      lazyConnect: true,
      connectTimeout: 5_000,
      maxRetriesPerRequest: 1,
    });
    clients.push(client);
    await client.connect();
    return client;
  };
  const close = async () => {
    await Promise.all(clients.splice(0).map((client) => client.quit().catch(() => client.disconnect())));
    await stopServer();
  };
  try {
    const probe = await connect();
    const info = await probe.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    return { url: serverUrl, source, version, connect, close, skip: false };
  } catch (error) {
    await close();
    return { skip: `Redis at ${source} unreachable: ${describeError(error)}` };
  }
}
