import Fastify, { type FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../app/system.js';
import { apiRoutes } from './api.js';
import { operationsRoutes } from './operations.js';
import { pageRoutes } from './pages/index.js';

export interface ServerOptions {
  /** pino options, or false for none (tests). Default: info level as JSON lines. */
  readonly logger?: boolean | { readonly level: string };
}

/** The HTTP face of the system: health and metrics, the JSON API and the two web sites. */
export async function buildServer(
  system: ConferenceSystem,
  options: ServerOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({ logger: options.logger ?? { level: 'info' }, bodyLimit: 64 * 1024 });
  await app.register(operationsRoutes, { system });
  await app.register(apiRoutes, { system });
  await app.register(pageRoutes, { system });
  return app;
}
