import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { postgresForSuite, redisForSuite } from '@stratus/testkit';
import type { MessageBackend } from './backend.js';
import { Messaging } from './messaging.js';
import { openMessageBackend } from './open-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-open-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));
const postgres = await postgresForSuite('messaging-open-backend');
const redis = await redisForSuite('messaging-open-backend');
after(async () => {
  await postgres.release();
  await redis.release();
});

async function roundTrip(backend: MessageBackend): Promise<unknown> {
  const messaging = new Messaging({ backend });
  try {
    await messaging.createQueue('open-backend');
    await messaging.queue('open-backend').send({ hello: backend.kind });
    const [message] = await messaging.queue('open-backend').receive();
    await message?.complete();
    return message?.body;
  } finally {
    await messaging.close();
  }
}

describe('openMessageBackend', () => {
  it('opens memory and SQLite backends from a URL', async () => {
    assert.deepEqual(await roundTrip(openMessageBackend('memory:')), { hello: 'memory' });
    assert.deepEqual(await roundTrip(openMessageBackend(`sqlite:${join(directory, 'a.db')}`)), {
      hello: 'sqlite',
    });
    assert.deepEqual(await roundTrip(openMessageBackend(join(directory, 'b.sqlite'))), { hello: 'sqlite' });
  });

  it('rejects what it does not know', () => {
    assert.throws(() => openMessageBackend(''), InvalidOptionsError);
    assert.throws(() => openMessageBackend('amqp://localhost'), /unsupported backend URL/);
  });

  it('opens PostgreSQL with a schema from the URL', { skip: postgres.skip }, async () => {
    const url = new URL(postgres.url as string);
    url.searchParams.set('schema', 'from_url');
    assert.deepEqual(await roundTrip(openMessageBackend(url.toString())), { hello: 'postgres' });
  });

  it('opens Redis with a key prefix from the URL', { skip: redis.skip }, async () => {
    const url = new URL(redis.url as string);
    url.searchParams.set('prefix', `${redis.keyPrefix ?? ''}open:`);
    assert.deepEqual(await roundTrip(openMessageBackend(url.toString())), { hello: 'redis' });
  });
});
