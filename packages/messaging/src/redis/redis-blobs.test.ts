/**
 * The blob layout of the Redis backend: a send of BLOB_MIN_MESSAGES or more stores its payloads as blobs (one
 * string per batch, see scripts.ts), counted by the messages that refer to them. These tests look at the keys
 * directly: every path that removes messages frees a blob exactly when its last message goes, and every path that
 * reads messages returns their exact bytes, whichever layout holds them.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { redisForSuite } from '@stratus/testkit';
import { Redis } from 'ioredis';
import type { DeliveredMessage, OutgoingMessage, QueueSettings } from '../backend.js';
import { UnknownQueueError } from '../errors.js';
import { DEFAULT_QUEUE_SETTINGS } from '../options.js';
import { RedisMessageBackend } from './redis-backend.js';
import { BLOB_MIN_MESSAGES, SCRIPTS } from './scripts.js';

const suite = await redisForSuite('messaging-redis-blobs');

const settings: QueueSettings = { ...DEFAULT_QUEUE_SETTINGS, duplicateWindowMs: 60_000 };
const T0 = 1_750_000_000_000;
const LOCK = 60_000;

/** Bodies that a text round trip would break: multi-byte UTF-8, NUL bytes, every byte value, invalid UTF-8. */
function body(i: number): Uint8Array {
  const text = new TextEncoder().encode(`message ${i}: żółć 日本語 🚀 ${'ß'.repeat(i % 7)}`);
  const bytes = new Uint8Array(text.byteLength + 256 + (i % 5));
  bytes.set(text);
  for (let b = 0; b < 256; b++) bytes[text.byteLength + b] = (b + i) % 256;
  // An unpaired surrogate half and a lone continuation byte: not valid UTF-8.
  bytes.set([0xed, 0xa0, 0x80, 0x80].slice(0, i % 5), text.byteLength + 256);
  return bytes;
}

const message = (id: string, i: number, extra: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
  id,
  body: body(i),
  subject: `subject ✓ ${i}`,
  headers: { 'x-ünïcode': `värde ${i}` },
  ...extra,
});

const batch = (prefix: string, count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => message(`${prefix}${from + i}`, from + i));

describe('redis message backend: payloads in blobs', { skip: suite.skip }, () => {
  const client = new Redis(suite.url as string, { lazyConnect: true });
  after(async () => {
    await suite.release();
    client.disconnect();
  });

  let queues = 0;
  /** A backend with a queue of its own and helpers that look at the queue's keys. */
  async function setup(queueSettings: QueueSettings = settings) {
    const keyPrefix = `${suite.keyPrefix}${++queues}:`;
    const backend = new RedisMessageBackend({ client, keyPrefix });
    await backend.putQueue('q', queueSettings);
    const base = `${keyPrefix}q:{q}:`;
    return {
      backend,
      base,
      blobKeys: () => client.keys(`${base}b*`),
      counts: async () =>
        Object.fromEntries(Object.entries(await client.hgetall(`${base}g`)).map(([k, v]) => [k, Number(v)])),
      fields: () => client.hlen(`${base}r`),
    };
  }

  async function receiveAll(backend: RedisMessageBackend, now = T0): Promise<DeliveredMessage[]> {
    const all: DeliveredMessage[] = [];
    for (;;) {
      const { messages } = await backend.receive('q', { max: 100, lockMs: LOCK, now });
      if (messages.length === 0) return all;
      all.push(...messages);
    }
  }

  function assertSame(
    got: { id: string; body: Uint8Array; subject?: string | undefined },
    sent: OutgoingMessage,
  ) {
    assert.equal(got.id, sent.id);
    assert.deepEqual(Buffer.from(got.body), Buffer.from(sent.body), `body of ${sent.id}`);
    assert.equal(got.subject, sent.subject);
  }

  it('stores a bulk send as one blob and returns every message byte for byte (receive, peek)', async () => {
    const { backend, blobKeys, counts, fields } = await setup();
    const sent = batch('m', 50);
    await backend.send('q', sent, T0);
    const blobs = await blobKeys();
    assert.equal(blobs.length, 1);
    assert.deepEqual(Object.values(await counts()), [50]);
    // One record per message and no payload fields.
    assert.equal(await fields(), 50);
    const peeked = await backend.peek('q', { limit: 100 });
    for (const [i, m] of peeked.entries()) assertSame(m, sent[i] as OutgoingMessage);
    const received = await receiveAll(backend);
    assert.equal(received.length, 50);
    for (const [i, m] of received.entries()) assertSame(m, sent[i] as OutgoingMessage);
    await backend.close();
  });

  it('cuts messages out of blob chunks right when they are not back to back (gaps, priorities)', async () => {
    const { backend } = await setup();
    const sent = batch('m', 30).map((m, i) => ({ ...m, priority: i % 3 === 0 ? 5 : 0 }));
    await backend.send('q', sent, T0);
    // Highest priority first: every third message, then the rest, each run in blob order.
    const first = await backend.receive('q', { max: 10, lockMs: LOCK, now: T0 });
    for (const m of first.messages) assertSame(m, sent[m.sequence - 1] as OutgoingMessage);
    assert.deepEqual(
      first.messages.map((m) => m.sequence),
      [1, 4, 7, 10, 13, 16, 19, 22, 25, 28],
    );
    // Complete every other one of the rest, then look at what is left: gaps between the messages read.
    const rest = await receiveAll(backend);
    await backend.complete(
      'q',
      rest.filter((_, i) => i % 2 === 0).map((m) => m.lockToken),
      T0,
    );
    const peeked = await backend.peek('q', { limit: 100 });
    assert.equal(peeked.length, 20);
    for (const m of peeked) assertSame(m, sent[m.sequence - 1] as OutgoingMessage);
    await backend.close();
  });

  it('frees the blob when its last message completes, not before', async () => {
    const { backend, blobKeys, counts, fields } = await setup();
    await backend.send('q', batch('m', 40), T0);
    const received = await receiveAll(backend);
    const outcomes = await backend.complete(
      'q',
      received.slice(0, 39).map((m) => m.lockToken),
      T0,
    );
    assert.ok(outcomes.every((o) => o === 'ok'));
    assert.equal((await blobKeys()).length, 1);
    assert.deepEqual(Object.values(await counts()), [1]);
    // A token that no longer holds its message releases nothing.
    assert.deepEqual(await backend.complete('q', [received[0]?.lockToken as string], T0), ['lost']);
    assert.deepEqual(Object.values(await counts()), [1]);
    assert.deepEqual(await backend.complete('q', [received[39]?.lockToken as string], T0), ['ok']);
    assert.deepEqual(await blobKeys(), []);
    assert.deepEqual(await counts(), {});
    assert.equal(await fields(), 0);
    await backend.close();
  });

  it('keeps the blob of expired and dead-lettered messages until they are purged', async () => {
    const { backend, blobKeys, counts, fields } = await setup();
    const sent = [
      ...batch('expiring', 20).map((m) => ({ ...m, expiresAt: T0 + 1000 })),
      ...batch('other', 20, 20),
    ];
    await backend.send('q', sent, T0);
    // Past the expiry: receive dead-letters the first 20 and delivers the rest.
    const received = await receiveAll(backend, T0 + 2000);
    assert.equal(received.length, 20);
    for (const m of received.slice(0, 10)) {
      assert.equal(await backend.deadLetter('q', m.lockToken, 'bad', 'żółć', T0 + 2000), 'ok');
    }
    assert.ok(
      (
        await backend.complete(
          'q',
          received.slice(10).map((m) => m.lockToken),
          T0 + 2000,
        )
      ).every((o) => o === 'ok'),
    );
    const letters = await backend.listDeadLetters('q', { limit: 100 });
    assert.equal(letters.length, 30);
    for (const letter of letters) {
      assertSame(letter, sent.find((m) => m.id === letter.id) as OutgoingMessage);
    }
    assert.deepEqual(Object.values(await counts()), [30]);
    // Resent, received and completed: one way out.
    const resent = letters.find((l) => l.deadLetterReason === 'bad') as (typeof letters)[number];
    assert.equal(await backend.resendDeadLetters('q', [resent.sequence], T0 + 3000), 1);
    const again = await receiveAll(backend, T0 + 3000);
    assert.equal(again.length, 1);
    assertSame(again[0] as DeliveredMessage, sent.find((m) => m.id === resent.id) as OutgoingMessage);
    assert.deepEqual(await backend.complete('q', [again[0]?.lockToken as string], T0 + 3000), ['ok']);
    assert.deepEqual(Object.values(await counts()), [29]);
    // Purged some by sequence, then all: the other ways out.
    const rest = letters.filter((l) => l !== resent).map((l) => l.sequence);
    assert.equal(await backend.purgeDeadLetters('q', rest.slice(0, 9), T0), 9);
    assert.deepEqual(Object.values(await counts()), [20]);
    assert.equal((await blobKeys()).length, 1);
    assert.equal(await backend.purgeDeadLetters('q', undefined, T0), 20);
    assert.deepEqual(await blobKeys(), []);
    assert.deepEqual(await counts(), {});
    assert.equal(await fields(), 0);
    await backend.close();
  });

  it('deletes every blob with the queue', async () => {
    const { backend, base, blobKeys } = await setup();
    for (let i = 0; i < 3; i++) await backend.send('q', batch(`b${i}-`, 30), T0);
    const received = await receiveAll(backend);
    await backend.deadLetter('q', received[0]?.lockToken as string, 'bad', undefined, T0);
    assert.equal((await blobKeys()).length, 3);
    assert.equal(await backend.deleteQueue('q'), true);
    assert.deepEqual(await client.keys(`${base}*`), []);
    // A queue made again under the same name starts clean.
    await backend.putQueue('q', settings);
    const sent = batch('new', 20);
    await backend.send('q', sent, T0);
    for (const [i, m] of (await receiveAll(backend)).entries()) assertSame(m, sent[i] as OutgoingMessage);
    await backend.close();
  });

  it('stores only accepted messages of a batch with duplicates, and frees the blob with the last of them', async () => {
    const { backend, blobKeys, counts, fields } = await setup();
    await backend.send('q', batch('m', 10), T0);
    // 10 already sent, 30 new, and 5 sent twice within the batch: 30 accepted of 45.
    const mixed = [...batch('m', 40), ...batch('m', 5, 35)];
    const outcomes = await backend.send('q', mixed, T0);
    assert.equal(outcomes.filter((o) => o.accepted).length, 30);
    assert.deepEqual(
      outcomes.map((o) => o.accepted),
      mixed.map((_, i) => i >= 10 && i < 40),
    );
    assert.equal((await blobKeys()).length, 1);
    assert.deepEqual(Object.values(await counts()), [30]);
    const received = await receiveAll(backend);
    assert.equal(received.length, 40);
    for (const [i, m] of received.entries()) assertSame(m, mixed[i] as OutgoingMessage);
    await backend.complete(
      'q',
      received.map((m) => m.lockToken),
      T0,
    );
    assert.deepEqual(await blobKeys(), []);
    assert.deepEqual(await counts(), {});
    assert.equal(await fields(), 0);
    await backend.close();
  });

  it('copies the few new payloads of a mostly duplicate batch out and keeps no blob', async () => {
    const { backend, blobKeys, counts } = await setup();
    await backend.send('q', batch('m', 40), T0);
    await receiveAll(backend).then((all) =>
      backend.complete(
        'q',
        all.map((m) => m.lockToken),
        T0,
      ),
    );
    const retry = batch('m', 45);
    const outcomes = await backend.send('q', retry, T0);
    assert.equal(outcomes.filter((o) => o.accepted).length, 5);
    assert.deepEqual(await blobKeys(), []);
    assert.deepEqual(await counts(), {});
    const received = await receiveAll(backend);
    for (const [i, m] of received.entries()) assertSame(m, retry[40 + i] as OutgoingMessage);
    // All duplicates: nothing is stored at all.
    assert.ok((await backend.send('q', batch('m', 20), T0)).every((o) => !o.accepted));
    assert.deepEqual(await blobKeys(), []);
    await backend.close();
  });

  it('reads both layouts side by side: single sends and small batches keep payload fields', async () => {
    const { backend, blobKeys, counts, fields } = await setup({ ...settings, sessions: true });
    const small = batch('small', BLOB_MIN_MESSAGES - 1).map((m) => ({ ...m, sessionId: 's1' }));
    const big = batch('big', BLOB_MIN_MESSAGES, 100).map((m, i) => ({
      ...m,
      sessionId: i % 2 ? 's1' : 's2',
    }));
    const single = { ...message('single', 7), sessionId: 's2' };
    await backend.send('q', small, T0);
    assert.deepEqual(await blobKeys(), []);
    await backend.send('q', big, T0);
    await backend.send('q', [single], T0);
    assert.equal((await blobKeys()).length, 1);
    const sent = [...small, ...big, single];
    // Sessions hand out one message per session at a time: complete as we go.
    const got: DeliveredMessage[] = [];
    for (;;) {
      const { messages } = await backend.receive('q', { max: 100, lockMs: LOCK, now: T0 });
      if (messages.length === 0) break;
      got.push(...messages);
      await backend.complete(
        'q',
        messages.map((m) => m.lockToken),
        T0,
      );
    }
    assert.equal(got.length, sent.length);
    for (const m of got) assertSame(m, sent.find((s) => s.id === m.id) as OutgoingMessage);
    assert.deepEqual(await blobKeys(), []);
    assert.deepEqual(await counts(), {});
    assert.equal(await fields(), 0);
    await backend.close();
  });

  it('splits a send of large payloads into several blobs', async () => {
    const { backend, blobKeys, counts } = await setup({ ...settings, maxMessageBytes: 1024 * 1024 });
    const large = Array.from({ length: 40 }, (_, i) => ({
      id: `large${i}`,
      body: new Uint8Array(400 * 1024).fill(i),
    }));
    await backend.send('q', large, T0);
    assert.equal((await blobKeys()).length, 2);
    assert.deepEqual(Object.values(await counts()).sort(), [20, 20]);
    const received = await receiveAll(backend);
    for (const [i, m] of received.entries()) assertSame(m, large[i] as OutgoingMessage);
    await backend.complete(
      'q',
      received.map((m) => m.lockToken),
      T0,
    );
    assert.deepEqual(await blobKeys(), []);
    await backend.close();
  });

  it('leaves a failed send only blobs that expire on their own', async () => {
    const { backend, base } = await setup();
    await assert.rejects(backend.send('nowhere', batch('m', 20), T0), UnknownQueueError);
    const orphans = await client.keys(`${base.replace('{q}', '{nowhere}')}b*`);
    assert.equal(orphans.length, 1);
    const ttl = await client.pttl(orphans[0] as string);
    assert.ok(ttl > 0 && ttl <= 5 * 60_000, `ttl ${ttl}`);
    await backend.close();
  });

  it('stays right when a reconnect sends the same blob and script again', async () => {
    const { base, blobKeys, counts, backend } = await setup({ ...settings, duplicateWindowMs: 0 });
    // What ioredis resends after a connection drops: SET NX and the script with the same arguments. With the
    // duplicate window off both runs store the messages, so the blob ends up with two counted references each.
    const payload = Buffer.from('{"id":"a"}\0body-ä');
    const pack = Buffer.concat(Array.from({ length: 20 }, () => payload));
    const routing = JSON.stringify(
      Array.from({ length: 20 }, (_, i) => [`r${i}`, false, false, 0, false, payload.length]),
    );
    const args = [String(T0), 'blobs', routing, 'resent', '20'];
    for (let run = 0; run < 2; run++) {
      await client.set(`${base}bresent`, pack, 'PX', 60_000, 'NX');
      await client.eval(SCRIPTS.send, 1, `${base}m`, ...args);
    }
    assert.equal(await client.pttl(`${base}bresent`), -1);
    assert.deepEqual(await counts(), { resent: 40 });
    const received = await receiveAll(backend);
    assert.equal(received.length, 40);
    for (const m of received) assert.equal(Buffer.from(m.body).toString(), 'body-ä');
    await backend.complete(
      'q',
      received.slice(0, 20).map((m) => m.lockToken),
      T0,
    );
    assert.equal((await blobKeys()).length, 1);
    await backend.complete(
      'q',
      received.slice(20).map((m) => m.lockToken),
      T0,
    );
    assert.deepEqual(await blobKeys(), []);
    await backend.close();
    // With the duplicate window on, the second run accepts nothing and must not delete the claimed blob.
    const deduplicated = await setup();
    for (let run = 0; run < 2; run++) {
      await client.set(`${deduplicated.base}bresent`, pack, 'PX', 60_000, 'NX');
      await client.eval(SCRIPTS.send, 1, `${deduplicated.base}m`, ...args);
    }
    assert.deepEqual(await deduplicated.counts(), { resent: 20 });
    assert.equal(await client.pttl(`${deduplicated.base}bresent`), -1);
    const once = await receiveAll(deduplicated.backend);
    assert.equal(once.length, 20);
    for (const m of once) assert.equal(Buffer.from(m.body).toString(), 'body-ä');
    await deduplicated.backend.close();
  });
});
