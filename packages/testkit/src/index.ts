export * from './exit-cleanup.js';
export * from './faults.js';
export * from './hostile-pg-types.js';
export * from './keep-alive.js';
export {
  suitePools,
  type TerminateConnectionsOptions,
  terminateConnections,
  terminatedByServer,
  terminateWhileHeld,
} from './postgres-connections.js';
export * from './processes.js';
export * from './script.js';
export * from './servers.js';
export * from './statement-runs.js';
export * from './virtual-clock.js';
