import { parseArgs } from 'node:util';
import {
  type ConfigEvent,
  describeDiff,
  diffGatewayConfigs,
  GatewayConfigError,
  type GatewayServer,
  parseGatewayConfig,
  readGatewayConfigFile,
  startGateway,
} from '@stratus/edge';
import { PostgresRateLimitStore, RedisRateLimitStore } from '@stratus/resilience';
import { pino } from 'pino';
import { UsageError } from './usage-error.js';

export type Write = (text: string) => void;

/**
 * `stratus gateway check <file> [--against <file>]`: validates a config; exit 0 when it is good, 1 with every
 * problem when not. With --against (the config running now), also prints what applying it would change.
 */
export async function checkGatewayFile(args: readonly string[], write: Write): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { against: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const [file] = positionals;
  if (file === undefined) throw new UsageError('gateway check needs a config file');
  let config: ReturnType<typeof parseGatewayConfig>;
  try {
    config = parseGatewayConfig(await readGatewayConfigFile(file));
  } catch (error) {
    if (!(error instanceof GatewayConfigError)) throw error;
    write(`${file}: invalid\n${error.problems.map((p) => `  ${p}\n`).join('')}`);
    return 1;
  }
  write(
    `${file}: valid, ${Object.keys(config.upstreams).length} upstream(s), ${config.routes.length} route(s)\n`,
  );
  if (values.against !== undefined) {
    const current = parseGatewayConfig(await readGatewayConfigFile(values.against));
    const lines = describeDiff(diffGatewayConfigs(current, config));
    write(lines.length === 0 ? `no change from ${values.against}\n` : `changes from ${values.against}:\n`);
    for (const line of lines) write(`  ${line}\n`);
  }
  return 0;
}

export interface GatewayRun {
  readonly server: GatewayServer;
  /** Resolves once the gateway has stopped (SIGINT or SIGTERM, or `stop()`). */
  readonly stopped: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `stratus gateway <file>`: serves the config file, applies it again whenever it changes or on SIGHUP, and logs
 * config changes and (unless --quiet) one access-log line per request as pino JSON on stdout.
 */
export async function runGateway(
  args: readonly string[],
  destination: NodeJS.WritableStream,
): Promise<GatewayRun> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      quiet: { type: 'boolean', default: false },
      'limits-store': { type: 'string' },
      'admin-port': { type: 'string' },
      'admin-host': { type: 'string', default: '127.0.0.1' },
    },
    allowPositionals: true,
    strict: true,
  });
  const [file] = positionals;
  if (file === undefined) throw new UsageError('gateway needs a config file');
  const port = portOf('port', values.port);
  const logger = pino({ base: { component: 'gateway' } }, destination);
  const limits = await openLimitsStore(values['limits-store'] ?? process.env.STRATUS_GATEWAY_LIMITS_URL);
  const adminPort =
    values['admin-port'] === undefined ? undefined : portOf('admin-port', values['admin-port']);
  const adminToken = process.env.STRATUS_GATEWAY_ADMIN_TOKEN;
  const server = await startGateway({
    configFile: file,
    port,
    host: values.host,
    ...(limits ? { rateLimitStore: limits.store } : {}),
    ...(adminPort === undefined
      ? {}
      : {
          admin: {
            port: adminPort,
            host: values['admin-host'],
            ...(adminToken ? { token: adminToken } : {}),
          },
        }),
  }).catch(async (error: unknown) => {
    await limits?.close();
    throw error;
  });
  server.gateway.events.on((event) => {
    switch (event.type) {
      case 'request':
        if (!values.quiet) logger.info({ ...event, component: undefined, name: undefined }, 'request');
        return;
      case 'config-applied':
        logger.info(configFields(event), 'config applied');
        return;
      case 'config-rejected':
        logger.warn(configFields(event), 'config refused, the last good one stays');
        return;
      case 'rate-limit-store-failed':
        logger.error({ limit: event.limit, allowed: event.allowed }, 'rate limit store did not answer');
        return;
      default:
        logger.warn(
          { upstream: event.upstream, target: event.target, durationMs: event.durationMs },
          event.type,
        );
    }
  });
  const reload = () => void server.watcher?.reload();
  const stopSignals = ['SIGINT', 'SIGTERM'] as const;
  let resolveStopped: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  const stop = async () => {
    process.off('SIGHUP', reload);
    for (const signal of stopSignals) process.off(signal, onSignal);
    await server.close();
    await limits?.close();
    logger.info('gateway stopped');
    resolveStopped();
  };
  const onSignal = () => void stop();
  process.on('SIGHUP', reload);
  for (const signal of stopSignals) process.once(signal, onSignal);
  logger.info({ url: server.url, admin: server.admin?.url, config: file }, 'gateway listening');
  return { server, stopped, stop };
}

function configFields(event: ConfigEvent) {
  return { version: event.version, source: event.source, problems: event.problems };
}

/**
 * The shared store of the rate limits: `redis://...` or `postgres://...`, so that every gateway on it enforces one
 * limit; none keeps the counters in this process. Commands fail fast while the store is unreachable (no offline
 * queue, 500 ms timeouts), so each limit's onStoreFailure decides at once instead of requests waiting.
 */
async function openLimitsStore(url: string | undefined) {
  if (url === undefined) return undefined;
  const { protocol } = new URL(url);
  if (protocol === 'redis:' || protocol === 'rediss:') {
    const { Redis } = await import('ioredis');
    const client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
    });
    client.on('error', () => {});
    return { store: new RedisRateLimitStore({ client }), close: async () => void client.disconnect() };
  }
  if (protocol === 'postgres:' || protocol === 'postgresql:') {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 500, statement_timeout: 500 });
    pool.on('error', () => {});
    return { store: new PostgresRateLimitStore({ pool }), close: () => pool.end() };
  }
  throw new UsageError(`--limits-store expects a redis:// or postgres:// URL, got "${protocol}"`);
}

function portOf(option: string, raw: string): number {
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new UsageError(`--${option} expects a port number, got "${raw}"`);
  return port;
}
