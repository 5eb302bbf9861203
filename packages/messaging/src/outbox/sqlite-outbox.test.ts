import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openSqlite } from '@stratus/sql';
import { VirtualClock } from '@stratus/testkit';
import { SqliteInbox } from './inbox.js';
import { outboxStoreContract } from './outbox-store.contract.js';
import { SqliteOutbox } from './sqlite-outbox.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-outbox-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

outboxStoreContract('sqlite', async (clock, table) => {
  const database = openSqlite(join(directory, `${table}.db`));
  database.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)');
  const outbox = new SqliteOutbox({ database, table, clock });
  return {
    store: outbox,
    async addCommitted(destination, messages) {
      database.transaction(() => {
        database.prepare('INSERT INTO orders (note) VALUES (?)').run('committed');
        outbox.add(destination, messages);
      });
    },
    async addRolledBack(destination, messages) {
      assert.throws(() =>
        database.transaction(() => {
          outbox.add(destination, messages);
          throw new Error('business rule failed');
        }),
      );
    },
    async close() {
      database.close();
    },
  };
});

describe('SqliteInbox', () => {
  it('runs an effect once per message id and consumer', () => {
    const database = openSqlite(join(directory, 'inbox.db'));
    database.exec('CREATE TABLE effects (message TEXT)');
    const inbox = new SqliteInbox({ database, clock: new VirtualClock({ now: 1000 }) });
    const effect = (id: string) => () => database.prepare('INSERT INTO effects VALUES (?)').run(id).changes;
    assert.deepEqual(inbox.process('billing', 'm-1', effect('m-1')), { duplicate: false, result: 1 });
    assert.deepEqual(inbox.process('billing', 'm-1', effect('m-1')), { duplicate: true });
    assert.deepEqual(inbox.process('shipping', 'm-1', effect('m-1')), { duplicate: false, result: 1 });
    assert.throws(() =>
      inbox.process('billing', 'm-2', () => {
        effect('m-2')();
        throw new Error('handler failed');
      }),
    );
    assert.deepEqual(
      inbox.process('billing', 'm-2', effect('m-2')),
      { duplicate: false, result: 1 },
      'a failed attempt leaves no record',
    );
    const rows = database.prepare('SELECT message FROM effects ORDER BY rowid').all<{ message: string }>();
    assert.deepEqual(
      rows.map((r) => r.message),
      ['m-1', 'm-1', 'm-2'],
    );
    database.close();
  });

  it('prunes old records', async () => {
    const database = openSqlite(join(directory, 'inbox-prune.db'));
    const clock = new VirtualClock({ now: 1000 });
    const inbox = new SqliteInbox({ database, clock });
    inbox.process('c', 'old', () => undefined);
    await clock.advance(10_000);
    inbox.process('c', 'new', () => undefined);
    assert.equal(inbox.prune(5000), 1);
    assert.deepEqual(
      inbox.process('c', 'old', () => 'again'),
      { duplicate: false, result: 'again' },
    );
    database.close();
  });
});
