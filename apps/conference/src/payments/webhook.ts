/**
 * Signed payment webhooks, as hosted-checkout processors send them: the processor signs the raw body with a shared
 * secret and a timestamp (`Stratus-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`), and the app
 * accepts the call only if the signature matches and the timestamp is within the replay window, so a captured call
 * cannot be replayed later and a forged one is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { StratusError } from '@stratus/core';

export const SIGNATURE_HEADER = 'stratus-signature';
/** How old a signed call may be when it arrives (either way, for clock skew). */
export const REPLAY_WINDOW_MS = 5 * 60_000;

/** The signature is missing, malformed, wrong or outside the replay window: the call is refused (401). */
export class WebhookSignatureError extends StratusError {
  constructor(reason: string) {
    super('ERR_CONFERENCE_WEBHOOK_SIGNATURE', `Webhook refused: ${reason}`);
  }
}

function hmac(secret: string, timestamp: number, body: string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest();
}

/** The signature header of `body` at `nowMs`. */
export function signWebhook(secret: string, body: string, nowMs: number): string {
  const timestamp = Math.floor(nowMs / 1000);
  return `t=${timestamp},v1=${hmac(secret, timestamp, body).toString('hex')}`;
}

/** Checks a signature header against the raw body; throws WebhookSignatureError when the call must be refused. */
export function verifyWebhook(secret: string, header: unknown, body: string, nowMs: number): void {
  if (typeof header !== 'string' || header.length === 0 || header.length > 512)
    throw new WebhookSignatureError('no signature');
  const fields = new Map(
    header.split(',').map((part) => {
      const at = part.indexOf('=');
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const timestamp = Number(fields.get('t'));
  const given = fields.get('v1') ?? '';
  if (!Number.isSafeInteger(timestamp) || !/^[0-9a-f]{64}$/.test(given))
    throw new WebhookSignatureError('a malformed signature');
  if (Math.abs(nowMs - timestamp * 1000) > REPLAY_WINDOW_MS)
    throw new WebhookSignatureError('a signature outside the replay window');
  if (!timingSafeEqual(Buffer.from(given, 'hex'), hmac(secret, timestamp, body)))
    throw new WebhookSignatureError('a wrong signature');
}
