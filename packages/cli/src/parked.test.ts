import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { immediateBackoff } from '@stratus/core';
import { EventStore, SqliteEventStoreBackend } from '@stratus/eventsourcing';
import { listParked, parkedSelection } from './parked.js';
import { runMain as run } from './run-main.test-support.js';

const directory = mkdtempSync(join(tmpdir(), 'stratus-cli-parked-'));
after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

/** A store file where subscription "invoices" parked order-1's two events (the first failed, the second waits). */
async function storeWithParkedEvents(path: string) {
  const store = new EventStore({ backend: new SqliteEventStoreBackend({ path }) });
  await store.appendToStream('order-1', [{ type: 'OrderPlaced', data: {} }]);
  await store.appendToStream('order-2', [{ type: 'OrderPlaced', data: {} }]);
  await store.appendToStream('order-1', [{ type: 'OrderShipped', data: {} }]);
  const subscription = store.subscribe({
    name: 'invoices',
    maxAttempts: 2,
    retryBackoff: immediateBackoff(),
    handler: (event) => {
      if (event.streamName === 'order-1') throw new Error('no address');
    },
  });
  await subscription.caughtUp;
  await subscription.stop();
  return store;
}

describe('stratus parked', () => {
  it('lists counts per subscription, then one subscription’s parked events with why', async () => {
    const store = await storeWithParkedEvents(join(directory, 'list.db'));
    let out = '';
    assert.equal(
      await listParked(store, (text) => {
        out += text;
      }),
      2,
    );
    assert.match(out, /^subscription\s+parked\ninvoices\s+2\n$/);
    out = '';
    await listParked(
      store,
      (text) => {
        out += text;
      },
      'invoices',
    );
    assert.match(out, /^#1 {2}OrderPlaced {2}order-1 {2}\S+ {2}failed, 2 attempts: Error: no address$/m);
    assert.match(
      out,
      /^#3 {2}OrderShipped {2}order-1 {2}\S+ {2}blocked, blocked behind an earlier parked event$/m,
    );
    await store.close();
  });

  it('asks for a retry and skips, from the command line, on the store’s file', async () => {
    const path = join(directory, 'cli.db');
    await (await storeWithParkedEvents(path)).close();
    const store = `sqlite:${path}`;
    assert.match(await run(['parked', '--store', store]), /invoices\s+2/);
    assert.match(await run(['parked', 'invoices', '--retry', '1', '--store', store]), /retry 1 parked event/);
    assert.match(await run(['parked', 'invoices', '--store', store]), /#1 .*\(retry asked\)$/m);
    assert.match(await run(['parked', 'invoices', '--skip', 'all', '--store', store]), /Skipped 2 parked/);
    assert.match(await run(['parked', '--store', store]), /^No parked events\.$/m);
  });

  it('reads positions or all, and refuses anything else', () => {
    assert.equal(parkedSelection('all'), 'all');
    assert.deepEqual(parkedSelection('3, 12'), [3, 12]);
    assert.throws(() => parkedSelection('first'), /comma-separated positions/);
    assert.throws(() => parkedSelection('0'), /comma-separated positions/);
  });
});
