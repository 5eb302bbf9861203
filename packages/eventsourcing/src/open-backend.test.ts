import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { postgresForSuite } from '@stratus/testkit';
import type { EventStoreBackend } from './backend.js';
import { EventStore } from './event-store.js';
import { openEventStoreBackend } from './open-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-open-es-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
const postgres = await postgresForSuite('eventsourcing-open-backend');
after(() => postgres.release());

async function roundTrip(backend: EventStoreBackend): Promise<string> {
  const store = new EventStore({ backend });
  try {
    await store.appendToStream('open-1', [{ type: 'Opened', data: {} }]);
    return `${backend.kind}:${(await store.readStream('open-1')).length}`;
  } finally {
    await store.close();
  }
}

describe('openEventStoreBackend', () => {
  it('opens memory and SQLite (creating the directory) from a URL', async () => {
    assert.equal(await roundTrip(openEventStoreBackend('memory:')), 'memory:1');
    assert.equal(
      await roundTrip(openEventStoreBackend(`sqlite:${join(directory, 'new', 'a.db')}`)),
      'sqlite:1',
    );
  });

  it('opens PostgreSQL with a schema from the URL', { skip: postgres.skip }, async () => {
    const url = new URL(postgres.url as string);
    url.searchParams.set('schema', 'es_from_url');
    assert.equal(await roundTrip(openEventStoreBackend(url.toString())), 'postgres:1');
  });

  it('refuses Redis and what it does not know', () => {
    assert.throws(() => openEventStoreBackend('redis://localhost'), /no Redis event store/);
    assert.throws(() => openEventStoreBackend('amqp://localhost'), InvalidOptionsError);
  });
});
