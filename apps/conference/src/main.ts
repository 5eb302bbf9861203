// The Conference Management System: `npm start` runs it whole on the embedded default (README: Conference).
import { InvalidOptionsError } from '@stratus/core';
import { pino } from 'pino';
import { type ConferenceConfig, configFromEnv } from './app/config.js';
import { terminalDestination, whereToGo } from './app/terminal.js';
import { startSystem } from './app/threaded-system.js';
import { listenOn, PortUnavailableError } from './http/listen.js';
import { logOptions } from './http/log-redaction.js';
import { metricsAccess } from './http/operations.js';
import { buildServer } from './http/server.js';

/** A setting to change (bad, missing, or a port taken) is one line naming it, exit code 1; anything else throws. */
function refuseToStart(error: unknown): never {
  if (!(error instanceof InvalidOptionsError || error instanceof PortUnavailableError)) throw error;
  process.stderr.write(`conference: cannot start: ${error.message}\n`);
  process.exit(1);
}

let config: ConferenceConfig;
try {
  config = configFromEnv();
} catch (error) {
  refuseToStart(error);
}
// A person at a terminal reads lines; anything else (a file, a log collector) gets pino's JSON lines.
const interactive = process.stdout.isTTY === true;
const log = interactive
  ? pino(logOptions(config.logLevel), terminalDestination(process.stdout))
  : pino(logOptions(config.logLevel));
if (config.payments === 'simulated')
  log.warn(
    { payments: config.payments },
    'the simulated payment processor is on: registrants accept their own payments (set PAYMENTS=off for real use)',
  );
const system = await startSystem(config, { log });
const server = await buildServer(system, { loggerInstance: log, config });
// Workers serve only health and metrics, on a port of their own (any free one by default), so several share a host.
const worker = config.role === 'worker';
let port: number;
try {
  port = await listenOn(server, {
    port: worker ? config.workerPort : config.port,
    host: config.host,
    setting: worker ? 'WORKER_PORT' : 'PORT',
  });
} catch (error) {
  await server.close();
  await system.stop();
  refuseToStart(error);
}
log.info(
  { dataDir: config.dataDir, role: config.role, backgroundThread: config.backgroundThread, port },
  worker ? `worker ready: health and metrics on port ${port}` : 'conference system ready',
);
if (metricsAccess(config) === 'off') log.info({}, 'metrics are off: set METRICS_TOKEN to serve /metrics');
if (interactive && !worker) process.stdout.write(whereToGo(config.host, port));

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
