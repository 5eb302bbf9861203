import { createServer, type Server } from 'node:http';
import type { Clock } from '@stratus/core';
import type { RateLimitStore } from '@stratus/resilience';
import { type AdminOptions, type AdminServer, startAdmin } from './admin.js';
import { type ConfigWatcher, readGatewayConfigFile, watchGatewayConfig } from './config-file.js';
import { Gateway } from './gateway.js';
import { listen, stopListening } from './listen.js';

export interface GatewayServerOptions {
  /** The config itself, or a JSON file that is watched and applied again whenever it changes. */
  readonly config?: unknown;
  readonly configFile?: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Time a client has to send a whole request (default 30 s) and its headers (default 10 s). */
  readonly requestTimeoutMs?: number;
  readonly headersTimeoutMs?: number;
  /** Idle keep-alive connections from clients are closed after this long (default 5 s). */
  readonly keepAliveTimeoutMs?: number;
  readonly clock?: Clock;
  /** Where rate limits keep their counters (see GatewayOptions.rateLimitStore). */
  readonly rateLimitStore?: RateLimitStore;
  /** An admin listener of its own: health, Prometheus metrics, and with a token the admin API. */
  readonly admin?: AdminOptions;
}

export interface GatewayServer {
  readonly gateway: Gateway;
  readonly server: Server;
  /** http://host:port of the listener. */
  readonly url: string;
  /** The config file's watcher, when the gateway runs from a file. */
  readonly watcher: ConfigWatcher | undefined;
  /** The admin listener, when `admin` was given. */
  readonly admin: AdminServer | undefined;
  /** Stops accepting, lets requests in flight finish, then closes the upstream connections. */
  close(): Promise<void>;
}

/** A gateway on its own HTTP listener. */
export async function startGateway(options: GatewayServerOptions): Promise<GatewayServer> {
  if ((options.config === undefined) === (options.configFile === undefined))
    throw new TypeError('startGateway: give exactly one of config and configFile');
  const config =
    options.configFile === undefined ? options.config : await readGatewayConfigFile(options.configFile);
  const gateway = new Gateway({
    config,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.rateLimitStore ? { rateLimitStore: options.rateLimitStore } : {}),
  });
  const server = createServer(
    {
      requestTimeout: options.requestTimeoutMs ?? 30_000,
      headersTimeout: options.headersTimeoutMs ?? 10_000,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      // Request smuggling: a request with both Content-Length and Transfer-Encoding is refused by Node's parser.
      insecureHTTPParser: false,
    },
    gateway.handle,
  );
  const url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const watcher =
    options.configFile === undefined ? undefined : watchGatewayConfig(gateway, options.configFile);
  let admin: AdminServer | undefined;
  try {
    admin = options.admin === undefined ? undefined : await startAdmin(gateway, watcher, options.admin);
  } catch (error) {
    watcher?.close();
    await stopListening(server);
    await gateway.close();
    throw error;
  }
  return {
    gateway,
    server,
    url,
    watcher,
    admin,
    async close() {
      watcher?.close();
      await admin?.close();
      await stopListening(server);
      await gateway.close();
    },
  };
}
