// The Conference Management System: `npm start` runs it whole on the embedded default (README: Conference).
import { pino } from 'pino';
import { configFromEnv } from './app/config.js';
import { terminalDestination, whereToGo } from './app/terminal.js';
import { startSystem } from './app/threaded-system.js';
import { buildServer } from './http/server.js';

const config = configFromEnv();
// A person at a terminal reads lines; anything else (a file, a log collector) gets pino's JSON lines.
const interactive = process.stdout.isTTY === true;
const log = interactive
  ? pino({ level: config.logLevel }, terminalDestination(process.stdout))
  : pino({ level: config.logLevel });
const system = await startSystem(config, { log });
const server = await buildServer(system, { loggerInstance: log });
await server.listen({ port: config.port, host: config.host });
log.info(
  { dataDir: config.dataDir, role: config.role, backgroundThread: config.backgroundThread },
  'conference system ready',
);
if (interactive) process.stdout.write(whereToGo(config.host, config.port));

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
