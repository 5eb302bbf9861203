/**
 * An order's token: what proves a caller may see and change the order, handed out with the order (placing it, or
 * finding it by e-mail and access code). It is the HMAC-SHA256 of the order id under the server secret of owner
 * tokens (owner-token.ts), base64url, so nothing needs storing and every web process can check it.
 */
import { sameSignature, signature } from './owner-token.js';

/** Orders whose signature was computed lately, per secret: most of an order's requests come within a minute. */
const recent = new WeakMap<Buffer, Map<string, Buffer>>();
/** Signatures kept per secret: 32 bytes each, the oldest dropped first. */
const RECENT_SIGNATURES = 10_000;

function orderSignature(orderId: string, secret: Buffer): Buffer {
  let signatures = recent.get(secret);
  if (signatures === undefined) {
    signatures = new Map();
    recent.set(secret, signatures);
  }
  const id = orderId.toLowerCase();
  let computed = signatures.get(id);
  if (computed === undefined) {
    // The prefix keeps it apart from owner tokens' signatures, which are over base64url text without line breaks.
    computed = signature(`order\n${id}`, secret);
    if (signatures.size >= RECENT_SIGNATURES) signatures.delete(signatures.keys().next().value as string);
    signatures.set(id, computed);
  }
  return computed;
}

export function orderToken(orderId: string, secret: Buffer): string {
  return orderSignature(orderId, secret).toString('base64url');
}

/** Whether `token` is the order's, compared in constant time. */
export function isOrderToken(orderId: string, token: string | undefined, secret: Buffer): boolean {
  return token !== undefined && sameSignature(token, orderSignature(orderId, secret));
}
