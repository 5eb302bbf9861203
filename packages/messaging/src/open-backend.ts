import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseBackendUrl } from '@stratus/core';
import type { MessageBackend } from './backend.js';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { PostgresMessageBackend } from './postgres/postgres-backend.js';
import { RedisMessageBackend } from './redis/redis-backend.js';
import { SqliteMessageBackend } from './sqlite/sqlite-backend.js';

/**
 * A backend from one configuration string, so deployments choose theirs by environment:
 * - `sqlite:<path>` (or a bare path ending in .db/.sqlite): the embedded default, a database file several
 *   processes on one host can share;
 * - `postgres://…` / `postgresql://…`: PostgreSQL (tables and functions in schema `stratus`, or `?schema=`);
 * - `redis://…` / `rediss://…`: Redis (keys under `stratus:`, or `?prefix=`);
 * - `memory:`: this process only, nothing durable.
 * The backend owns the connections it opens here and closes them on `close()`.
 */
export function openMessageBackend(url: string): MessageBackend {
  const location = parseBackendUrl(url);
  switch (location.kind) {
    case 'memory':
      return new MemoryMessageBackend();
    case 'sqlite':
      return openSqliteFile(location.path);
    case 'postgres':
      return new PostgresMessageBackend({
        connectionString: location.connectionString,
        schema: location.schema,
      });
    case 'redis':
      return new RedisMessageBackend({ url: location.url, keyPrefix: location.prefix });
  }
}

/** Opens (creating its directory when needed) a SQLite database file as a message backend. */
function openSqliteFile(path: string): MessageBackend {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return new SqliteMessageBackend({ path });
}
