// The PostgreSQL message backend's options, and their validation.
import { assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import { assertSchemaName } from '@stratus/sql';
import type { Pool } from 'pg';

export interface PostgresMessageBackendOptions {
  /** Your pg Pool: the backend never ends it. The LISTEN connection for `watch` is taken from it. */
  pool?: Pool;
  /** Or a connection string: the backend creates its own pool and ends it on close. */
  connectionString?: string;
  /** Connections of the pool created from `connectionString`; default 10. */
  poolSize?: number;
  /** Schema holding the tables and functions, created and migrated on first use; default 'stratus'. */
  schema?: string;
}

/** How to create the pool the backend owns. */
export interface OwnPool {
  readonly connectionString: string;
  readonly max: number;
}

/** The validated options: the user's pool, or how to create one (undefined when the user gave theirs). */
export interface PostgresBackendSetup {
  readonly pool: Pool | undefined;
  readonly ownPool: OwnPool | undefined;
  readonly schema: string;
}

export function setUpPostgresBackend(options: PostgresMessageBackendOptions): PostgresBackendSetup {
  assertObject('options', options as unknown);
  const { pool, connectionString, poolSize = 10, schema = 'stratus' } = options;
  if ((pool === undefined) === (connectionString === undefined)) {
    throw new InvalidOptionsError('pool', 'give either a pg Pool or a connectionString');
  }
  if (pool !== undefined && typeof (pool as { query?: unknown }).query !== 'function') {
    throw new InvalidOptionsError('pool', 'expected a pg Pool');
  }
  if (connectionString !== undefined && typeof connectionString !== 'string') {
    throw new InvalidOptionsError('connectionString', 'expected a string');
  }
  assertInteger('poolSize', poolSize, 1);
  assertSchemaName('schema', schema);
  return {
    pool,
    ownPool: pool === undefined ? { connectionString: connectionString as string, max: poolSize } : undefined,
    schema,
  };
}
