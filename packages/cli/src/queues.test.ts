import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging, openMessageBackend } from '@stratus/messaging';
import { VirtualClock } from '@stratus/testkit';
import { listDeadLetters, selectDeadLetters, showQueues } from './queues.js';
import { runMain } from './run-main.test-support.js';

const T0 = Date.UTC(2026, 0, 1);

async function setup() {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
  await messaging.createQueue('orders');
  await messaging.createTopic('orders.placed');
  await messaging.subscribe('billing', { topics: 'orders.*' });
  await messaging.queue('orders').sendBatch([{ body: 1 }, { body: 2 }, { body: 3 }]);
  await clock.advance(90_000);
  for (const message of await messaging.queue('orders').receive({ max: 2 })) {
    await message.deadLetter('validation', `bad ${String(message.body)}`);
  }
  return { messaging };
}

describe('stratus queues and dead-letters', () => {
  it('prints one aligned row per queue and subscription', async () => {
    const { messaging } = await setup();
    let out = '';
    await showQueues(messaging, (text) => {
      out += text;
    });
    const lines = out.trimEnd().split('\n');
    assert.match(
      lines[0] ?? '',
      /^queue\s+kind\s+length\s+available\s+scheduled\s+in flight\s+waiting\s+dead\s+oldest$/,
    );
    assert.match(lines[1] ?? '', /^billing\s+sub orders\.\*\s+0\s+0\s+0\s+0\s+0\s+0\s+-$/);
    assert.match(lines[2] ?? '', /^orders\s+queue\s+1\s+1\s+0\s+0\s+0\s+2\s+90\.0 s$/);
  });

  it('lists dead letters with their reasons and selects them for resending', async () => {
    const { messaging } = await setup();
    let out = '';
    assert.equal(
      await listDeadLetters(messaging, 'orders', (text) => {
        out += text;
      }),
      2,
    );
    assert.match(out, /^#1 .* deliveries 1 {2}validation: bad 1$/m);
    assert.match(out, /^#2 .* validation: bad 2$/m);
    assert.deepEqual(await selectDeadLetters(messaging, 'orders', 'all'), [1, 2]);
    assert.deepEqual(await selectDeadLetters(messaging, 'orders', '2, 1'), [2, 1]);
    await assert.rejects(selectDeadLetters(messaging, 'orders', '1,x'), /sequence numbers/);
  });
});

describe('stratus dead-letters on a session that a dead letter holds', () => {
  const directory = mkdtempSync(join(tmpdir(), 'stratus-cli-queues-'));
  after(() => rmSync(directory, { recursive: true, force: true, maxRetries: 10 }));

  it('marks the dead letter; resending or purging it from the command line lets the session go on in order', async () => {
    const backend = `sqlite:${join(directory, 'messages.db')}`;
    const open = () => new Messaging({ backend: openMessageBackend(backend), retry: false });
    let messaging = open();
    await messaging.createQueue('orders', { sessions: true });
    const ids = ['created', 'paid', 'shipped', 'delivered'];
    await messaging.queue('orders').sendBatch(ids.map((id) => ({ body: id, id, sessionId: 'order-1' })));
    const [created] = await messaging.queue('orders').receive();
    await created?.deadLetter('invalid', 'no such customer');
    assert.deepEqual(await messaging.queue('orders').receive(), [], 'the session is held');
    await messaging.close();

    const listed = await runMain(['dead-letters', 'orders', '--backend', backend]);
    assert.match(
      listed,
      /^#\d+ {2}created {2}\S+ {2}deliveries 1 {2}invalid: no such customer {2}\[holds session order-1\]$/m,
    );
    assert.match(
      await runMain(['dead-letters', 'orders', '--resend', 'all', '--backend', backend]),
      /Resent 1/,
    );
    messaging = open();
    const handled: string[] = [];
    for (const message of await messaging.queue('orders').receive()) {
      handled.push(message.id);
      await message.complete();
    }
    const [paid] = await messaging.queue('orders').receive();
    handled.push(paid?.id as string);
    await paid?.deadLetter('invalid', 'amount mismatch');
    await messaging.close();

    assert.match(
      await runMain(['dead-letters', 'orders', '--purge', 'all', '--backend', backend]),
      /Purged 1/,
    );
    messaging = open();
    for (let message = (await messaging.queue('orders').receive())[0]; message !== undefined; ) {
      handled.push(message.id);
      await message.complete();
      message = (await messaging.queue('orders').receive())[0];
    }
    await messaging.close();
    assert.deepEqual(handled, ['created', 'paid', 'shipped', 'delivered']);
  });
});
