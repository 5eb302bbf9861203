// The Conference Management System: `npm start` runs it whole on the embedded default (README: Conference).
import { configFromEnv } from './app/config.js';
import { startConferenceSystem } from './app/system.js';
import { buildServer } from './http/server.js';

const config = configFromEnv();
const system = await startConferenceSystem(config);
const server = await buildServer(system, { logger: { level: config.logLevel } });
await server.listen({ port: config.port, host: config.host });
server.log.info({ dataDir: config.dataDir, role: config.role }, 'conference system ready');

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  server.log.info({ signal }, 'shutting down');
  await server.close();
  await system.stop();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
