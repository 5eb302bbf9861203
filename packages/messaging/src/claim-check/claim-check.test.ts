import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { InvalidOptionsError } from '@stratus/core';
import { VirtualClock } from '@stratus/testkit';
import { CLAIM_CHECK_HEADER, createClaimCheck } from './claim-check.js';
import { ClaimCheckCorruptError, ClaimCheckMissingError, ClaimCheckSignatureError } from './errors.js';
import { FilesystemBlobStore } from './filesystem-blob-store.js';
import { MemoryBlobStore } from './memory-blob-store.js';

const KEY = 'a signing key of 32 bytes, ok.!!';
const OTHER_KEY = 'another signing key, also long..';

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

function text(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

describe('claim check', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'stratus-claim-check-'));
  });
  after(() => rm(directory, { recursive: true, force: true, maxRetries: 10 }));

  it('sends a 5 MiB body as a small reference and restores it byte for byte (filesystem store)', async () => {
    const store = new FilesystemBlobStore({ directory });
    const claimCheck = createClaimCheck({ store, thresholdBytes: 256 * 1024 });
    const payload = randomBytes(5 * 1024 * 1024);
    const offloaded = await claimCheck.offload(payload);
    assert.ok(offloaded !== undefined);
    assert.equal(offloaded.body.byteLength, 0, 'the bus carries no payload bytes');
    const header = offloaded.headers[CLAIM_CHECK_HEADER] ?? '';
    assert.ok(header.length < 200, `a small reference (${header.length} characters)`);
    assert.deepEqual(Object.keys(offloaded.headers), [CLAIM_CHECK_HEADER]);
    assert.match(offloaded.reference.key, /^claim-check\/[0-9a-f-]{36}$/);
    assert.equal(offloaded.reference.size, payload.byteLength);

    const restored = await claimCheck.restore(offloaded.headers, offloaded.body);
    assert.equal(restored.byteLength, payload.byteLength);
    assert.equal(sha256(restored), sha256(payload));
  });

  it('leaves bodies at or below the threshold inline and restores them unchanged', async () => {
    const store = new MemoryBlobStore();
    const claimCheck = createClaimCheck({ store, thresholdBytes: 10 });
    assert.equal(await claimCheck.offload(text('0123456789')), undefined);
    assert.equal(await claimCheck.offload(new Uint8Array(0)), undefined);
    assert.ok(
      (await claimCheck.offload(text('0123456789A'))) !== undefined,
      'one byte over goes to the store',
    );
    const inline = text('inline');
    assert.equal(await claimCheck.restore({ other: 'header' }, inline), inline);
    assert.equal(await claimCheck.restore(undefined, inline), inline);
    assert.equal(await claimCheck.release({ other: 'header' }), false);
    assert.equal((await store.list({ limit: 10 })).blobs.length, 1);
  });

  it('gives each offload a key of its own, even for equal bodies', async () => {
    const claimCheck = createClaimCheck({ store: new MemoryBlobStore(), thresholdBytes: 0 });
    const body = text('same');
    const first = await claimCheck.offload(body);
    const second = await claimCheck.offload(body);
    assert.notEqual(first?.reference.key, second?.reference.key);
    await claimCheck.release(first?.headers);
    assert.deepEqual(await claimCheck.restore(second?.headers, new Uint8Array(0)), body);
  });

  it('throws ClaimCheckMissingError when the payload is gone', async () => {
    const store = new MemoryBlobStore();
    const claimCheck = createClaimCheck({ store, thresholdBytes: 0 });
    const offloaded = await claimCheck.offload(text('payload'));
    assert.ok(offloaded !== undefined);
    await store.delete([offloaded.reference.key]);
    await assert.rejects(
      claimCheck.restore(offloaded.headers, offloaded.body),
      (error: unknown) => error instanceof ClaimCheckMissingError && error.key === offloaded.reference.key,
    );
  });

  it('throws ClaimCheckCorruptError for a malformed reference or a blob that does not match it', async () => {
    const store = new MemoryBlobStore();
    const claimCheck = createClaimCheck({ store, thresholdBytes: 0 });
    for (const token of [
      '',
      'v2;key=a;size=1;sha256=x',
      'v1;key=../etc/passwd;size=1;sha256=' + 'A'.repeat(43),
    ]) {
      await assert.rejects(
        claimCheck.restore({ [CLAIM_CHECK_HEADER]: token }, new Uint8Array(0)),
        ClaimCheckCorruptError,
      );
    }
    const offloaded = await claimCheck.offload(text('payload'));
    assert.ok(offloaded !== undefined);
    await store.put(offloaded.reference.key, text('PAYLOAD'));
    await assert.rejects(claimCheck.restore(offloaded.headers, offloaded.body), ClaimCheckCorruptError);
  });

  describe('signed references (CC-5)', () => {
    it('restores what a holder of the key sent', async () => {
      const claimCheck = createClaimCheck({
        store: new MemoryBlobStore(),
        thresholdBytes: 0,
        signingKey: KEY,
      });
      const offloaded = await claimCheck.offload(text('secret payload'));
      assert.match(offloaded?.headers[CLAIM_CHECK_HEADER] ?? '', /;sig=[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(
        await claimCheck.restore(offloaded?.headers, new Uint8Array(0)),
        text('secret payload'),
      );
    });

    it('refuses a reference forged to point at another blob, and does not release it', async () => {
      const store = new MemoryBlobStore();
      const claimCheck = createClaimCheck({ store, thresholdBytes: 0, signingKey: KEY });
      const victim = await claimCheck.offload(text('someone else’s payload'));
      const mine = await claimCheck.offload(text('my payload'));
      assert.ok(victim !== undefined && mine !== undefined);
      const myToken = mine.headers[CLAIM_CHECK_HEADER] as string;
      const victimToken = victim.headers[CLAIM_CHECK_HEADER] as string;
      const forgeries = [
        // My valid signature on the victim's key, size and digest.
        `${victimToken.slice(0, victimToken.indexOf(';sig='))}${myToken.slice(myToken.indexOf(';sig='))}`,
        // The victim's reference with the signature dropped.
        victimToken.slice(0, victimToken.indexOf(';sig=')),
        // My reference with the size changed.
        myToken.replace(/;size=\d+/, ';size=3'),
      ];
      for (const token of forgeries) {
        const headers = { [CLAIM_CHECK_HEADER]: token };
        await assert.rejects(claimCheck.restore(headers, new Uint8Array(0)), ClaimCheckSignatureError, token);
        await assert.rejects(claimCheck.release(headers), ClaimCheckSignatureError, token);
      }
      assert.deepEqual(await store.get(victim.reference.key), text('someone else’s payload'));
    });

    it('refuses references signed with a key it does not hold; verifies old keys while rotating', async () => {
      const store = new MemoryBlobStore();
      const old = createClaimCheck({ store, thresholdBytes: 0, signingKey: OTHER_KEY });
      const offloaded = await old.offload(text('sent before the rotation'));
      const stranger = createClaimCheck({ store, thresholdBytes: 0, signingKey: KEY });
      await assert.rejects(stranger.restore(offloaded?.headers, new Uint8Array(0)), ClaimCheckSignatureError);
      const rotating = createClaimCheck({ store, thresholdBytes: 0, signingKey: [KEY, OTHER_KEY] });
      assert.deepEqual(
        await rotating.restore(offloaded?.headers, new Uint8Array(0)),
        text('sent before the rotation'),
      );
      const fresh = await rotating.offload(text('sent after'));
      assert.deepEqual(
        await stranger.restore(fresh?.headers, new Uint8Array(0)),
        text('sent after'),
        'signed with the first key',
      );
    });
  });

  it('release deletes the payload after completion; archive mode keeps it', async () => {
    const store = new MemoryBlobStore();
    const claimCheck = createClaimCheck({ store, thresholdBytes: 0 });
    const offloaded = await claimCheck.offload(text('payload'));
    assert.ok(offloaded !== undefined);
    assert.equal(await claimCheck.release(offloaded.headers), true);
    assert.equal(await store.get(offloaded.reference.key), undefined);
    assert.equal(await claimCheck.release(offloaded.headers), true, 'releasing twice is harmless');

    const archive = createClaimCheck({ store, thresholdBytes: 0, archive: true });
    const kept = await archive.offload(text('kept'));
    assert.equal(await archive.release(kept?.headers), false);
    assert.deepEqual(await archive.restore(kept?.headers, new Uint8Array(0)), text('kept'));
  });

  it('sweeps orphaned payloads by age, only under its key prefix', async () => {
    const clock = new VirtualClock();
    const store = new MemoryBlobStore({ clock });
    const claimCheck = createClaimCheck({ store, thresholdBytes: 0, keyPrefix: 'queue-a/', clock });
    const old = [];
    for (let i = 0; i < 1005; i++) old.push(await claimCheck.offload(text(`old ${i}`)));
    await store.put('queue-b/foreign', text('another prefix'));
    await clock.advance(60 * 60_000);
    const recent = await claimCheck.offload(text('recent'));

    assert.deepEqual(await claimCheck.sweep({ olderThanMs: 30 * 60_000, now: clock.now() }), {
      deleted: 1005,
    });
    assert.equal(await store.get(old[0]?.reference.key as string), undefined);
    assert.deepEqual(await claimCheck.restore(recent?.headers, new Uint8Array(0)), text('recent'));
    assert.deepEqual(await store.get('queue-b/foreign'), text('another prefix'));
    assert.deepEqual(await claimCheck.sweep({ olderThanMs: 30 * 60_000, now: clock.now() }), { deleted: 0 });
  });

  it('rejects invalid options', async () => {
    const store = new MemoryBlobStore();
    const invalid: [string, Record<string, unknown>][] = [
      ['store', { store: {}, thresholdBytes: 1 }],
      ['thresholdBytes', { store, thresholdBytes: -1 }],
      ['thresholdBytes', { store, thresholdBytes: 1.5 }],
      ['keyPrefix', { store, thresholdBytes: 1, keyPrefix: '../' }],
      ['keyPrefix', { store, thresholdBytes: 1, keyPrefix: 'x'.repeat(165) }],
      ['signingKey', { store, thresholdBytes: 1, signingKey: 'short' }],
      ['signingKey', { store, thresholdBytes: 1, signingKey: [] }],
      ['signingKey[1]', { store, thresholdBytes: 1, signingKey: [KEY, 42] }],
      ['archive', { store, thresholdBytes: 1, archive: 'yes' }],
    ];
    for (const [option, options] of invalid) {
      assert.throws(
        () => createClaimCheck(options as never),
        (error: unknown) => error instanceof InvalidOptionsError && error.option === option,
        option,
      );
    }
    const claimCheck = createClaimCheck({ store, thresholdBytes: 1 });
    await assert.rejects(claimCheck.sweep({ olderThanMs: -1, now: 0 }), InvalidOptionsError);
    await assert.rejects(claimCheck.offload('text' as never), InvalidOptionsError);
  });
});
