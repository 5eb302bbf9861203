import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { MessageTooLargeError } from '../errors.js';
import { MemoryMessageBackend } from '../memory/memory-backend.js';
import { Messaging } from '../messaging.js';
import { createClaimCheck } from './claim-check.js';
import { MemoryBlobStore } from './memory-blob-store.js';

const T0 = Date.UTC(2026, 0, 1);

async function setup() {
  const clock = new VirtualClock({ now: T0 });
  const store = new MemoryBlobStore({ clock });
  const claimCheck = createClaimCheck({
    store,
    thresholdBytes: 1024,
    signingKey: 'a signing key of 32 bytes or so!',
    clock,
  });
  const backend = new MemoryMessageBackend();
  const messaging = new Messaging({ backend, clock, claimCheck, retry: false });
  await messaging.createQueue('images', { maxMessageBytes: 4096 });
  const blobs = async () => (await store.list({ limit: 1000 })).blobs.length;
  return { messaging, backend, store, blobs };
}

describe('Claim check through the message client', () => {
  it('carries a payload larger than the queue accepts and gives it back byte for byte', async () => {
    const { messaging, backend, blobs } = await setup();
    const payload = randomBytes(200_000);
    await messaging.queue('images').send(new Uint8Array(payload));
    assert.equal(await blobs(), 1);
    const [stored] = await backend.peek('images', { limit: 1 });
    assert.ok(
      (stored?.body.byteLength ?? Number.POSITIVE_INFINITY) < 1024,
      'the queue holds only the reference',
    );
    const [message] = await messaging.queue<Uint8Array>('images').receive();
    assert.deepEqual(Buffer.from(message?.body ?? new Uint8Array()), payload);
    await message?.complete();
    assert.equal(await blobs(), 0, 'the payload is deleted once the message is completed');
  });

  it('sends small bodies inline', async () => {
    const { messaging, blobs } = await setup();
    await messaging.queue('images').send({ small: true });
    assert.equal(await blobs(), 0);
    const [message] = await messaging.queue('images').receive();
    assert.deepEqual(message?.body, { small: true });
  });

  it('deletes the payload of a duplicate at once', async () => {
    const { messaging, blobs } = await setup();
    const big = 'x'.repeat(10_000);
    assert.equal((await messaging.queue('images').send(big, { id: 'same' })).accepted, true);
    assert.equal((await messaging.queue('images').send(big, { id: 'same' })).accepted, false);
    assert.equal(await blobs(), 1);
  });

  it('refuses a large body without a claim check', async () => {
    const messaging = new Messaging({ backend: new MemoryMessageBackend() });
    await messaging.createQueue('images', { maxMessageBytes: 4096 });
    await assert.rejects(messaging.queue('images').send('x'.repeat(10_000)), MessageTooLargeError);
  });

  it('dead-letters a message whose payload is gone, with the reason', async () => {
    const { messaging, store } = await setup();
    await messaging.queue('images').send('y'.repeat(10_000));
    const keys = (await store.list({ limit: 10 })).blobs.map((blob) => blob.key);
    await store.delete(keys);
    const seen: unknown[] = [];
    const consumer = messaging.consume('images', (message) => {
      seen.push(message.body);
    });
    await waitUntil(
      async () => (await messaging.queue('images').stats()).deadLettered === 1,
      'the message was dead-lettered',
    );
    await consumer.close();
    assert.deepEqual(seen, []);
    const [dead] = await messaging.queue('images').listDeadLetters();
    assert.match(dead?.deadLetterDescription ?? '', /claim|blob|missing/i);
  });
});
