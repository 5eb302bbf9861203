import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseBackendUrl } from './backend-url.js';
import { InvalidOptionsError } from './errors.js';

describe('parseBackendUrl', () => {
  it('reads memory, SQLite paths, PostgreSQL with a schema and Redis with a prefix', () => {
    assert.deepEqual(parseBackendUrl('memory:'), { kind: 'memory' });
    assert.deepEqual(parseBackendUrl('sqlite:./.data/events.db'), {
      kind: 'sqlite',
      path: './.data/events.db',
    });
    assert.deepEqual(parseBackendUrl('sqlite:///var/lib/app.db'), {
      kind: 'sqlite',
      path: '/var/lib/app.db',
    });
    assert.deepEqual(parseBackendUrl('data/app.sqlite3'), { kind: 'sqlite', path: 'data/app.sqlite3' });
    assert.deepEqual(parseBackendUrl('postgres://u:p@db:5432/app?schema=orders&sslmode=disable'), {
      kind: 'postgres',
      connectionString: 'postgres://u:p@db:5432/app?sslmode=disable',
      schema: 'orders',
    });
    assert.deepEqual(parseBackendUrl('rediss://cache:6380/0?prefix=app%3A'), {
      kind: 'redis',
      url: 'rediss://cache:6380/0',
      prefix: 'app:',
    });
  });

  it('refuses anything else with InvalidOptionsError', () => {
    for (const url of ['', 'amqp://localhost', 'events', 42 as unknown as string]) {
      assert.throws(() => parseBackendUrl(url), InvalidOptionsError);
    }
  });
});
