import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryMessageBackend, Messaging } from '@stratus/messaging';
import { VirtualClock } from '@stratus/testkit';
import { listDeadLetters, selectDeadLetters, showQueues } from './queues.js';

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
