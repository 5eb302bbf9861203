/**
 * The executable definition of a BlobStore: `blobStoreContract(label, setup)` registers node:test suites that
 * every store runs (memory, filesystem, S3 on s3rver). Times are whole seconds because S3 reports Last-Modified
 * to the second.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import type { BlobInfo, BlobListOptions, BlobStore } from './blob-store.js';
import { BlobStoreClosedError, InvalidBlobKeyError } from './errors.js';

export interface BlobStoreFixture {
  /** A store of its own (or a key space of its own in a shared one), with nothing in it. */
  readonly store: BlobStore;
  /**
   * For stores whose creation times the test cannot drive with the clock it handed over (S3 stamps them on the
   * server): make the blob of `key` look created at `at`.
   */
  readonly backdate?: (key: string, at: number) => Promise<void>;
  readonly cleanup: () => Promise<void>;
}

export function blobStoreContract(
  label: string,
  setup: (clock: VirtualClock) => Promise<BlobStoreFixture>,
  options: { skip?: string | false } = {},
): void {
  describe(`BlobStore contract: ${label}`, { skip: options.skip ?? false }, () => {
    async function withStore(
      test: (t: {
        store: BlobStore;
        clock: VirtualClock;
        put: (key: string, body: Uint8Array) => Promise<void>;
      }) => Promise<void>,
    ): Promise<void> {
      const clock = new VirtualClock({ now: Date.UTC(2026, 0, 1) });
      const fixture = await setup(clock);
      const put = async (key: string, body: Uint8Array) => {
        await fixture.store.put(key, body);
        await fixture.backdate?.(key, clock.now());
      };
      try {
        await test({ store: fixture.store, clock, put });
      } finally {
        await fixture.cleanup();
      }
    }

    it('returns a 5 MiB payload byte for byte, and an empty one', () =>
      withStore(async ({ store, put }) => {
        const payload = randomBytes(5 * 1024 * 1024);
        await put('payloads/big', payload);
        const back = await store.get('payloads/big');
        assert.ok(back instanceof Uint8Array);
        assert.equal(back.byteLength, payload.byteLength);
        assert.equal(sha256(back), sha256(payload));

        await put('payloads/empty', new Uint8Array(0));
        assert.equal((await store.get('payloads/empty'))?.byteLength, 0);
      }));

    it('keeps its own copy: changing the buffer after put changes nothing', () =>
      withStore(async ({ store, put }) => {
        const body = new TextEncoder().encode('original');
        await put('copy', body);
        body.fill(0);
        assert.equal(new TextDecoder().decode(await store.get('copy')), 'original');
      }));

    it('answers undefined for a key never stored', () =>
      withStore(async ({ store }) => {
        assert.equal(await store.get('never/stored'), undefined);
      }));

    it('replaces the blob of a key put twice', () =>
      withStore(async ({ store, put }) => {
        await put('twice', new TextEncoder().encode('first'));
        await put('twice', new TextEncoder().encode('second, longer'));
        assert.equal(new TextDecoder().decode(await store.get('twice')), 'second, longer');
        assert.deepEqual(
          (await listAll(store, { limit: 10 })).map((b) => [b.key, b.size]),
          [['twice', 14]],
        );
      }));

    it('deletes idempotently: missing keys are ignored, deleting twice is harmless', () =>
      withStore(async ({ store, put }) => {
        await put('d/1', bytes('one'));
        await put('d/2', bytes('two'));
        await store.delete(['d/1', 'd/missing']);
        assert.equal(await store.get('d/1'), undefined);
        assert.equal(new TextDecoder().decode(await store.get('d/2')), 'two');
        await store.delete(['d/1']);
        await store.delete([]);
        assert.deepEqual(await keys(store, {}), ['d/2']);
      }));

    it('deletes more keys than one S3 batch holds', () =>
      withStore(async ({ store, put }) => {
        const many = Array.from({ length: 1003 }, (_, i) => `many/${String(i).padStart(4, '0')}`);
        await put(many[0] as string, bytes('x'));
        await put(many[1002] as string, bytes('y'));
        await store.delete(many);
        assert.deepEqual(await keys(store, {}), []);
      }));

    it('lists by prefix with sizes and creation times', () =>
      withStore(async ({ store, clock, put }) => {
        const t0 = clock.now();
        await put('a/1', bytes('1'));
        await put('a/22', bytes('22'));
        await clock.advance(5_000);
        await put('b/1', bytes('333'));
        await put('ab', bytes('4444'));
        const byKey = (list: BlobInfo[]) => [...list].sort((x, y) => (x.key < y.key ? -1 : 1));
        assert.deepEqual(byKey(await listAll(store, { prefix: 'a/', limit: 10 })), [
          { key: 'a/1', createdAt: t0, size: 1 },
          { key: 'a/22', createdAt: t0, size: 2 },
        ]);
        assert.deepEqual(await keys(store, { prefix: 'a' }), ['a/1', 'a/22', 'ab']);
        assert.deepEqual(await keys(store, { prefix: 'b/1' }), ['b/1']);
        assert.deepEqual(await keys(store, { prefix: 'c/' }), []);
        assert.deepEqual(byKey(await listAll(store, { prefix: 'b/', limit: 10 })), [
          { key: 'b/1', createdAt: t0 + 5_000, size: 3 },
        ]);
      }));

    it('lists by age: only blobs created strictly before olderThan', () =>
      withStore(async ({ store, clock, put }) => {
        const t0 = clock.now();
        await put('old/1', bytes('x'));
        await put('old/2', bytes('x'));
        await clock.advance(10_000);
        await put('new/1', bytes('x'));
        assert.deepEqual(await keys(store, { olderThan: t0 + 5_000 }), ['old/1', 'old/2']);
        assert.deepEqual(await keys(store, { olderThan: t0 }), []);
        assert.deepEqual(await keys(store, { olderThan: t0 + 10_000 }), ['old/1', 'old/2']);
        assert.deepEqual(await keys(store, { olderThan: t0 + 10_001 }), ['new/1', 'old/1', 'old/2']);
        assert.deepEqual(await keys(store, { olderThan: t0 + 5_000, prefix: 'new/' }), []);
      }));

    it('pages with a cursor: every blob once, no page above the limit', () =>
      withStore(async ({ store, put }) => {
        const written = Array.from({ length: 25 }, (_, i) => `page/${String(i).padStart(2, '0')}`);
        for (const key of written) await put(key, bytes(key));
        await put('other/1', bytes('x'));
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.list({ prefix: 'page/', limit: 10, cursor });
          assert.ok(page.blobs.length <= 10, `a page of ${page.blobs.length}`);
          seen.push(...page.blobs.map((b) => b.key));
          cursor = page.cursor;
          assert.ok(++pages <= 10, 'the listing ends');
        } while (cursor !== undefined);
        assert.equal(seen.length, 25, 'no blob twice');
        assert.deepEqual([...seen].sort(), written);
      }));

    it('pages on while the listed blobs are deleted (how a sweeper works)', () =>
      withStore(async ({ store, clock, put }) => {
        const t0 = clock.now();
        for (let i = 0; i < 12; i++) await put(`sweep/old-${String(i).padStart(2, '0')}`, bytes('x'));
        await clock.advance(60_000);
        for (let i = 0; i < 3; i++) await put(`sweep/new-${i}`, bytes('x'));
        let cursor: string | undefined;
        let deleted = 0;
        let pages = 0;
        do {
          const page = await store.list({ prefix: 'sweep/', olderThan: t0 + 30_000, limit: 5, cursor });
          await store.delete(page.blobs.map((b) => b.key));
          deleted += page.blobs.length;
          cursor = page.cursor;
          assert.ok(++pages <= 20, 'the listing ends');
        } while (cursor !== undefined);
        assert.equal(deleted, 12);
        assert.deepEqual(await keys(store, { prefix: 'sweep/' }), [
          'sweep/new-0',
          'sweep/new-1',
          'sweep/new-2',
        ]);
      }));

    it('rejects bad keys with InvalidBlobKeyError before touching anything', () =>
      withStore(async ({ store }) => {
        const bad: unknown[] = [
          '',
          '.',
          '..',
          '../escape',
          'a/../../escape',
          'a/./b',
          '/absolute',
          'trailing/',
          'double//slash',
          '.hidden',
          'back\\slash',
          'space d',
          'tilde~',
          'percent%2F',
          'ünïcode',
          'colon:key',
          'new\nline',
          'x'.repeat(201),
          42,
          undefined,
        ];
        for (const key of bad) {
          await assert.rejects(
            store.put(key as string, bytes('x')),
            InvalidBlobKeyError,
            `put ${String(key)}`,
          );
          await assert.rejects(store.get(key as string), InvalidBlobKeyError, `get ${String(key)}`);
          await assert.rejects(
            store.delete(['fine', key as string]),
            InvalidBlobKeyError,
            `delete ${String(key)}`,
          );
        }
        await store.put(`${'x'.repeat(199)}y`, bytes('200 characters are fine'));
        await store.put('A-z_0.9/seg.ment/-x', bytes('every allowed character'));
        assert.deepEqual(await keys(store, {}), ['A-z_0.9/seg.ment/-x', `${'x'.repeat(199)}y`]);
        await assert.rejects(store.list({ prefix: '../', limit: 1 }), InvalidBlobKeyError);
        await assert.rejects(store.list({ limit: 0 }), InvalidOptionsError);
        await assert.rejects(store.list({ limit: 1001 }), InvalidOptionsError);
        await assert.rejects(store.list({ limit: 1, olderThan: Number.NaN }), InvalidOptionsError);
      }));

    it('rejects every call once closed', () =>
      withStore(async ({ store, put }) => {
        await put('k', bytes('x'));
        await store.close();
        await assert.rejects(store.put('k', bytes('x')), BlobStoreClosedError);
        await assert.rejects(store.get('k'), BlobStoreClosedError);
        await assert.rejects(store.delete(['k']), BlobStoreClosedError);
        await assert.rejects(store.list({ limit: 1 }), BlobStoreClosedError);
      }));
  });
}

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

async function listAll(store: BlobStore, options: BlobListOptions): Promise<BlobInfo[]> {
  const blobs: BlobInfo[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await store.list({ ...options, cursor });
    blobs.push(...page.blobs);
    cursor = page.cursor;
    if (cursor === undefined) return blobs;
  }
  throw new Error('the listing did not end within 100 pages');
}

async function keys(store: BlobStore, options: Omit<BlobListOptions, 'limit'>): Promise<string[]> {
  return (await listAll(store, { limit: 1000, ...options })).map((b) => b.key).sort();
}
