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
export {
  findPostgresBinaries,
  type PostgresBinaries,
  type PostgresServer,
  type StartPostgresOptions,
  startPostgres,
} from './postgres-server.js';
export * from './processes.js';
export {
  findRedisServer,
  type RedisServer,
  type StartRedisOptions,
  startRedis,
} from './redis-server.js';
export * from './script.js';
export {
  freePort,
  type RestartOptions,
  type StartedServer,
  TestServerUnavailableError,
} from './server-processes.js';
export * from './servers.js';
export * from './statement-runs.js';
export * from './virtual-clock.js';
