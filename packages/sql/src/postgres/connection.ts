// How an adapter that can own its pool is given PostgreSQL: your pg Pool, or a connection string it opens a pool for.
import { assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import type { Pool } from 'pg';
import { keepPoolAlive } from './connection-loss.js';
import { assertSchemaName } from './migrations.js';

export interface PostgresConnectionOptions {
  /** Your pg Pool: the adapter never ends it. A LISTEN connection, when the adapter needs one, is taken from it. */
  readonly pool?: Pool;
  /** Or a connection string: the adapter creates its own pool and ends it on close. */
  readonly connectionString?: string;
  /** Connections of the pool created from `connectionString`; default 10. */
  readonly poolSize?: number;
  /** Schema holding the adapter's tables and functions, created and migrated on first use; default 'stratus'. */
  readonly schema?: string;
}

/** How to create the pool the adapter owns. */
export interface OwnPool {
  readonly connectionString: string;
  readonly max: number;
}

/** The validated options: the user's pool, or how to create one (undefined when the user gave theirs). */
export interface CheckedPostgresConnection {
  readonly pool: Pool | undefined;
  readonly ownPool: OwnPool | undefined;
  readonly schema: string;
}

/** Checks PostgresConnectionOptions, naming the option at fault in an InvalidOptionsError. */
export function checkPostgresConnection(options: PostgresConnectionOptions): CheckedPostgresConnection {
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

/**
 * Opens the pool an adapter (or an application) owns, kept alive when PostgreSQL ends its connections
 * (keepPoolAlive); pg is loaded only now, so it stays an optional peer.
 */
export async function openOwnPool(config: OwnPool): Promise<Pool> {
  const { default: pg } = await import('pg');
  return keepPoolAlive(new pg.Pool(config));
}
