/**
 * An order's token: what proves a caller may see and change the order, handed out with the order (placing it, or
 * finding it by e-mail and access code). It is the HMAC-SHA256 of the order id under the server secret of owner
 * tokens (owner-token.ts), base64url, so nothing needs storing and every web process can check it.
 */
import { sameSignature, signature } from './owner-token.js';

function orderSignature(orderId: string, secret: Buffer): Buffer {
  // The prefix keeps it apart from owner tokens' signatures, which are over base64url text without line breaks.
  return signature(`order\n${orderId.toLowerCase()}`, secret);
}

export function orderToken(orderId: string, secret: Buffer): string {
  return orderSignature(orderId, secret).toString('base64url');
}

/** Whether `token` is the order's, compared in constant time. */
export function isOrderToken(orderId: string, token: string | undefined, secret: Buffer): boolean {
  return token !== undefined && sameSignature(token, orderSignature(orderId, secret));
}
