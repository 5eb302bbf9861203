import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { REPLAY_WINDOW_MS, signWebhook, verifyWebhook, WebhookSignatureError } from './webhook.js';

const SECRET = 'a webhook secret of thirty-two bytes or more';
const NOW = Date.UTC(2026, 10, 27, 12);
const BODY = '{"paymentId":"p-1","status":"completed","amountCents":39800,"currency":"USD"}';

describe('signed payment webhooks', () => {
  it('accepts the body it signed, within the replay window either way', () => {
    const signature = signWebhook(SECRET, BODY, NOW);
    assert.match(signature, /^t=\d+,v1=[0-9a-f]{64}$/);
    verifyWebhook(SECRET, signature, BODY, NOW);
    verifyWebhook(SECRET, signature, BODY, NOW + REPLAY_WINDOW_MS);
    verifyWebhook(SECRET, signature, BODY, NOW - REPLAY_WINDOW_MS);
  });

  it('refuses another body, another secret, a replay after the window, and anything malformed', () => {
    const signature = signWebhook(SECRET, BODY, NOW);
    const refused = (header: unknown, body = BODY, secret = SECRET, now = NOW) =>
      assert.throws(() => verifyWebhook(secret, header, body, now), WebhookSignatureError);
    refused(signature, BODY.replace('39800', '100'));
    refused(signature, BODY, 'another secret of thirty-two bytes or more');
    refused(signature, BODY, SECRET, NOW + REPLAY_WINDOW_MS + 1000);
    for (const header of [
      undefined,
      '',
      'v1=abc',
      't=x,v1=00',
      `t=${NOW / 1000},v1=${'0'.repeat(64)}`,
      'x'.repeat(600),
    ])
      refused(header);
  });
});
