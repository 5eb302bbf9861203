import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { InvalidOptionsError } from '@stratus/core';
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
  if (typeof url !== 'string' || url.length === 0)
    throw new InvalidOptionsError('url', 'expected a backend URL');
  if (url === 'memory:' || url === 'memory') return new MemoryMessageBackend();
  if (url.startsWith('sqlite:'))
    return openSqliteFile(url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, ''));
  if (/\.(db|sqlite3?)$/.test(url) && !url.includes('://')) return openSqliteFile(url);
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    return new PostgresMessageBackend({ connectionString: parsed.toString(), schema });
  }
  if (/^rediss?:\/\//.test(url)) {
    const parsed = new URL(url);
    const keyPrefix = parsed.searchParams.get('prefix') ?? undefined;
    parsed.searchParams.delete('prefix');
    return new RedisMessageBackend({ url: parsed.toString(), keyPrefix });
  }
  throw new InvalidOptionsError(
    'url',
    `unsupported backend URL ${JSON.stringify(url)}: use sqlite:, postgres://, redis:// or memory:`,
  );
}

/** Opens (creating its directory when needed) a SQLite database file as a message backend. */
function openSqliteFile(path: string): MessageBackend {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  return new SqliteMessageBackend({ path });
}
