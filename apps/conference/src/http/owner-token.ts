/**
 * The owner's bearer token: `<payload>.<signature>`, both base64url, the payload `{ conferenceId, exp, code }` (exp in
 * epoch ms, code a fingerprint of the access code it was signed for, so rotating the code ends it) and the signature
 * its HMAC-SHA256 under a server secret, compared in constant time. The same secret and HMAC sign order tokens
 * (order-token.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface OwnerClaims {
  readonly conferenceId: string;
  /** Epoch milliseconds after which the token is refused. */
  readonly exp: number;
  /** accessCodeFingerprint of the code the owner signed in with: the token dies when the code is rotated. */
  readonly code: string;
}

/** How long a token from POST /api/owner/login is valid. */
export const OWNER_TOKEN_TTL_MS = 12 * 60 * 60_000;

let processSecret: Buffer | undefined;

/** OWNER_TOKEN_SECRET when set, else a random secret for this process (tokens then die with it). */
export function ownerTokenSecret(env: NodeJS.ProcessEnv = process.env): Buffer {
  const configured = env.OWNER_TOKEN_SECRET;
  if (configured !== undefined && configured !== '') return Buffer.from(configured, 'utf8');
  processSecret ??= randomBytes(32);
  return processSecret;
}

/** The secret of an `ownerTokenSecret` option: the one given, else ownerTokenSecret(). */
export function secretOption(configured: string | undefined): Buffer {
  return configured === undefined ? ownerTokenSecret() : Buffer.from(configured, 'utf8');
}

/** HMAC-SHA256 of `payload` under `secret`. */
export function signature(payload: string, secret: Buffer): Buffer {
  return createHmac('sha256', secret).update(payload).digest();
}

/** Whether `given` (base64url, as sent) is exactly `expected`, compared in constant time. */
export function sameSignature(given: string, expected: Buffer): boolean {
  const bytes = Buffer.from(given, 'base64url');
  // Decoding skips characters outside base64url: only the canonical text of the signature is accepted.
  if (bytes.length !== expected.length || bytes.toString('base64url') !== given) return false;
  return timingSafeEqual(bytes, expected);
}

/** A fingerprint of a conference's access code that cannot be turned back into the code without the secret. */
function accessCodeFingerprint(conferenceId: string, accessCode: string, secret: Buffer): string {
  return signature(`access-code\n${conferenceId}\n${accessCode}`, secret)
    .subarray(0, 16)
    .toString('base64url');
}

/** A token for the conference, valid until `exp` while its access code is `accessCode`. */
export function ownerTokenFor(conferenceId: string, accessCode: string, exp: number, secret: Buffer): string {
  return signOwnerToken(
    { conferenceId, exp, code: accessCodeFingerprint(conferenceId, accessCode, secret) },
    secret,
  );
}

/** Whether the token of `claims` was signed for the access code its conference has now. */
export function isForAccessCode(claims: OwnerClaims, accessCode: string, secret: Buffer): boolean {
  return claims.code === accessCodeFingerprint(claims.conferenceId, accessCode, secret);
}

export function signOwnerToken(claims: OwnerClaims, secret: Buffer): string {
  const { conferenceId, exp, code } = claims;
  const payload = Buffer.from(JSON.stringify({ conferenceId, exp, code }), 'utf8').toString('base64url');
  return `${payload}.${signature(payload, secret).toString('base64url')}`;
}

/** The claims of a token signed with `secret` and not expired at `now`, else undefined. */
export function verifyOwnerToken(token: string, secret: Buffer, now: number): OwnerClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 2) return undefined;
  const [payload, signed] = parts as [string, string];
  if (!sameSignature(signed, signature(payload, secret))) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { conferenceId, exp, code } = claims as Record<string, unknown>;
  if (typeof conferenceId !== 'string' || typeof exp !== 'number' || typeof code !== 'string' || !(exp > now))
    return undefined;
  return { conferenceId, exp, code };
}
