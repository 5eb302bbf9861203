import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ConferenceConfig } from '../app/config.js';
import type { ConferenceSystem } from '../app/system.js';
import { apiRoutes } from './api.js';
import { abuseLimitsFor } from './limits/abuse-limits.js';
import { logOptions } from './log-redaction.js';
import { metricsAccess, operationsRoutes } from './operations.js';
import { pageRoutes } from './pages/index.js';
import { securityHeaders } from './security-headers.js';

export interface ServerOptions {
  /** pino options, or false for none (tests). Default: info level as JSON lines. */
  readonly logger?: boolean | { readonly level: string };
  /** A pino logger to use instead (the one the system logs to; made with logOptions). */
  readonly loggerInstance?: FastifyBaseLogger;
  /** The process's configuration, as configFromEnv read it; default the system's. */
  readonly config?: ConferenceConfig;
}

/**
 * The HTTP face of the system: health and metrics, and, except in a worker, the JSON API and the two web sites.
 * Every answer carries the security headers; the Node server's timeouts come from the configuration.
 */
export async function buildServer(
  system: ConferenceSystem,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const config = options.config ?? system.config;
  const settings = {
    bodyLimit: 64 * 1024,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Node checks the request and headers timeouts every connectionsCheckingInterval (30 s by default).
    http: { headersTimeout: config.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    // The abuse limits key on the client's address: behind proxies, TRUST_PROXY says whose X-Forwarded-For to believe.
    trustProxy: config.trustProxy,
  };
  const logger = options.logger ?? true;
  const app: FastifyInstance =
    options.loggerInstance === undefined
      ? Fastify({
          ...settings,
          logger: logger !== false && logOptions(logger === true ? 'info' : logger.level),
        })
      : Fastify({ ...settings, loggerInstance: options.loggerInstance });
  securityHeaders(app);
  await app.register(operationsRoutes, { system, metrics: metricsAccess(config) });
  if (config.role === 'worker') return app;
  const limits = abuseLimitsFor(system);
  await app.register(apiRoutes, { system, limits });
  await app.register(pageRoutes, { system, limits });
  return app;
}
