import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { InvalidOptionsError, parseBackendUrl } from '@stratus/core';
import type { EventStoreBackend } from './backend.js';
import { MemoryEventStoreBackend } from './memory/memory-event-store.js';
import { PostgresEventStoreBackend } from './postgres/postgres-event-store.js';
import { SqliteEventStoreBackend } from './sqlite/sqlite-event-store.js';

/**
 * An event store backend from one configuration string, so tools and deployments choose theirs by environment:
 * `sqlite:<path>` (or a bare path ending in .db), `postgres://…` (schema `stratus`, or `?schema=`) or `memory:`.
 * The backend owns the connections it opens here and closes them on `close()`.
 */
export function openEventStoreBackend(url: string): EventStoreBackend {
  const location = parseBackendUrl(url);
  switch (location.kind) {
    case 'memory':
      return new MemoryEventStoreBackend();
    case 'sqlite':
      if (location.path !== ':memory:') mkdirSync(dirname(location.path), { recursive: true });
      return new SqliteEventStoreBackend({ path: location.path });
    case 'postgres':
      return new PostgresEventStoreBackend({
        connectionString: location.connectionString,
        schema: location.schema,
      });
    case 'redis':
      throw new InvalidOptionsError(
        'url',
        'there is no Redis event store: use sqlite:, postgres:// or memory:',
      );
  }
}
