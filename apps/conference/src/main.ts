// The Conference Management System: `npm start` runs it whole on the embedded default (README: Conference).
import { pino } from 'pino';
import { configFromEnv } from './app/config.js';
import { startSystem } from './app/threaded-system.js';
import { buildServer } from './http/server.js';

const config = configFromEnv();
const log = pino({ level: config.logLevel });
const system = await startSystem(config, { log });
const server = await buildServer(system, { loggerInstance: log });
await server.listen({ port: config.port, host: config.host });
log.info(
  { dataDir: config.dataDir, role: config.role, backgroundThread: config.backgroundThread },
  'conference system ready',
);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'shutting down');
  await server.close();
  await system.stop();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
