import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { apiRoutes } from './api.js';
import { abuseLimitsFor } from './limits/abuse-limits.js';
import { operationsRoutes } from './operations.js';
import { pageRoutes } from './pages/index.js';

export interface ServerOptions {
  /** pino options, or false for none (tests). Default: info level as JSON lines. */
  readonly logger?: boolean | { readonly level: string };
  /** A pino logger to use instead (the one the system logs to). */
  readonly loggerInstance?: FastifyBaseLogger;
}

/** The HTTP face of the system: health and metrics, the JSON API and the two web sites. */
export async function buildServer(
  system: ConferenceSystem,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const bodyLimit = 64 * 1024;
  // The abuse limits key on the client's address: behind proxies, TRUST_PROXY says whose X-Forwarded-For to believe.
  const trustProxy = system.config.trustProxy;
  const app: FastifyInstance =
    options.loggerInstance === undefined
      ? Fastify({ logger: options.logger ?? { level: 'info' }, bodyLimit, trustProxy })
      : Fastify({ loggerInstance: options.loggerInstance, bodyLimit, trustProxy });
  const limits = abuseLimitsFor(system);
  await app.register(operationsRoutes, { system });
  await app.register(apiRoutes, { system, limits });
  await app.register(pageRoutes, { system, limits });
  return app;
}
