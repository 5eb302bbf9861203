import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OperationCancelledError } from '@stratus/core';
import { VirtualClock, waitUntil } from '@stratus/testkit';
import { MemoryMessageBackend } from './memory/memory-backend.js';
import { Messaging } from './messaging.js';
import { RemoteRequestError, RequestReplyClient, RequestTimeoutError, respond } from './request-reply.js';

const T0 = Date.UTC(2026, 0, 1);

async function setup() {
  const clock = new VirtualClock({ now: T0 });
  const messaging = new Messaging({ backend: new MemoryMessageBackend(), clock, retry: false });
  await messaging.createQueue('prices', { maxDeliveryCount: 2 });
  const client = await new RequestReplyClient(messaging, { timeoutMs: 5000 }).start();
  return { clock, messaging, client };
}

describe('Asynchronous Request-Reply', () => {
  it('returns the responder’s answer to the requester', async () => {
    const { messaging, client } = await setup();
    const responder = messaging.consume(
      'prices',
      respond(messaging, (body: { sku: string }) => ({ sku: body.sku, price: 42 })),
    );
    const [a, b] = await Promise.all([
      client.request<{ sku: string; price: number }>('prices', { sku: 'A' }),
      client.request<{ sku: string; price: number }>('prices', { sku: 'B' }),
    ]);
    assert.deepEqual(a, { sku: 'A', price: 42 });
    assert.deepEqual(b, { sku: 'B', price: 42 });
    assert.equal(client.pending, 0);
    await responder.close();
    await client.close();
    assert.equal(await messaging.getQueue(client.replyQueue), undefined, 'the reply queue is gone');
  });

  it('times out when nobody answers, and the unanswered request expires with it', async () => {
    const { clock, messaging, client } = await setup();
    let outcome: unknown;
    void client.request('prices', { sku: 'A' }).catch((error) => {
      outcome = error;
    });
    await waitUntil(
      async () => (await messaging.queue('prices').stats()).length === 1,
      'the request was sent',
    );
    await clock.advance(5000);
    await waitUntil(() => outcome !== undefined, 'the request gave up');
    assert.ok(outcome instanceof RequestTimeoutError);
    assert.deepEqual(
      (await messaging.queue('prices').peek()).map((m) => m.expiresAt),
      [T0 + 5000],
    );
    await client.close();
  });

  it('reports a responder that failed on the last delivery', async () => {
    const { clock, messaging, client } = await setup();
    const responder = messaging.consume(
      'prices',
      respond(messaging, () => {
        throw new Error('no such sku');
      }),
      { retryBackoff: { kind: 'constant', delay: () => 100 } },
    );
    let outcome: unknown;
    void client.request('prices', { sku: 'Z' }).catch((error) => {
      outcome = error;
    });
    for (let i = 0; i < 20 && outcome === undefined; i++) await clock.advance(100);
    await waitUntil(() => outcome !== undefined, 'the error came back');
    assert.ok(outcome instanceof RemoteRequestError);
    assert.equal(outcome.remoteMessage, 'no such sku');
    await responder.close();
    await client.close();
  });

  it('gives up when the caller aborts', async () => {
    const { client } = await setup();
    const controller = new AbortController();
    const request = client.request('prices', { sku: 'A' }, { signal: controller.signal });
    controller.abort();
    await assert.rejects(request, OperationCancelledError);
    assert.equal(client.pending, 0);
    await client.close();
  });
});
