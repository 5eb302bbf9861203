import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { blobStoreContract } from './blob-store.contract.js';
import { FilesystemBlobStore } from './filesystem-blob-store.js';

let root: string;
let sequence = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'stratus-blobs-'));
});
after(() => rm(root, { recursive: true, force: true, maxRetries: 10 }));

function freshDirectory(): string {
  return join(root, `store-${++sequence}`);
}

blobStoreContract('filesystem', async (clock) => {
  const directory = freshDirectory();
  return {
    store: new FilesystemBlobStore({ directory, clock }),
    cleanup: () => rm(directory, { recursive: true, force: true, maxRetries: 10 }),
  };
});

describe('FilesystemBlobStore', () => {
  it('fans keys out into 256 subdirectories named by a hash of the key', async () => {
    const directory = freshDirectory();
    const store = new FilesystemBlobStore({ directory, fsync: false });
    await store.put('claims/0190-a', new Uint8Array([1]));
    const fan = createHash('sha256').update('claims/0190-a').digest('hex').slice(0, 2);
    assert.deepEqual(await readdir(directory), [fan]);
    assert.deepEqual(await readdir(join(directory, fan)), ['claims~0190-a']);
    for (let i = 0; i < 200; i++) await store.put(`k${i}`, new Uint8Array([i]));
    const dirs = await readdir(directory);
    assert.ok(dirs.length > 100, `200 keys spread over ${dirs.length} directories`);
    assert.ok(dirs.every((d) => /^[0-9a-f]{2}$/.test(d)));
  });

  it('never shows a reader part of a blob while it is written or replaced', async () => {
    const store = new FilesystemBlobStore({ directory: freshDirectory() });
    const first = randomBytes(4 * 1024 * 1024);
    const second = randomBytes(4 * 1024 * 1024);
    const digests = new Set([digest(first), digest(second)]);
    let reads = 0;
    for (const body of [first, second]) {
      let done = false;
      const writing = store.put('atomic', body).finally(() => {
        done = true;
      });
      while (!done) {
        const seen = await store.get('atomic');
        if (seen !== undefined) assert.ok(digests.has(digest(seen)), 'a whole blob, old or new');
        reads++;
      }
      await writing;
    }
    assert.equal(digest((await store.get('atomic')) as Uint8Array), digest(second));
    assert.ok(reads >= 2);
  });

  it('lists neither temporary files left by a crash nor files it did not write', async () => {
    const directory = freshDirectory();
    const clock = new VirtualClock();
    const store = new FilesystemBlobStore({ directory, clock, fsync: false });
    await store.put('kept', new Uint8Array([1, 2, 3]));
    const fan = (await readdir(directory))[0] as string;
    await writeFile(join(directory, fan, '~crashed-put'), 'partial');
    await writeFile(join(directory, fan, 'odd name'), 'foreign');
    await writeFile(join(directory, 'README'), 'foreign');
    const page = await store.list({ limit: 10 });
    assert.deepEqual(page, { blobs: [{ key: 'kept', createdAt: clock.now(), size: 3 }], cursor: undefined });
  });

  it('shares its blobs with another store on the same directory (another process)', async () => {
    const directory = freshDirectory();
    const clock = new VirtualClock();
    await new FilesystemBlobStore({ directory, clock }).put('shared/1', new Uint8Array([7]));
    const other = new FilesystemBlobStore({ directory, clock });
    assert.deepEqual(await other.get('shared/1'), new Uint8Array([7]));
    assert.deepEqual((await other.list({ limit: 5 })).blobs, [
      { key: 'shared/1', createdAt: clock.now(), size: 1 },
    ]);
  });

  it('rejects invalid options and cursors of another store', async () => {
    assert.throws(() => new FilesystemBlobStore({ directory: '' }), InvalidOptionsError);
    assert.throws(
      () => new FilesystemBlobStore({ directory: freshDirectory(), fsync: 'yes' as unknown as boolean }),
      InvalidOptionsError,
    );
    const store = new FilesystemBlobStore({ directory: freshDirectory() });
    await assert.rejects(store.list({ limit: 1, cursor: 'opaque-s3-token' }), InvalidOptionsError);
  });
});

function digest(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
