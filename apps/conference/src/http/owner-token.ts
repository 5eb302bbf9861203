/**
 * The owner's bearer token: `<payload>.<signature>`, both base64url, the payload `{ conferenceId, exp, code }` (exp in
 * epoch ms, code a fingerprint of the access code it was signed for, so rotating the code ends it) and the signature
 * its HMAC-SHA256 under a server secret, compared in constant time. The same secret and HMAC sign order tokens
 * (order-token.ts).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionsError } from '@stratus/core';
import { type ConferenceConfig, MIN_SECRET_BYTES } from '../app/config.js';

export interface OwnerClaims {
  readonly conferenceId: string;
  /** Epoch milliseconds after which the token is refused. */
  readonly exp: number;
  /** accessCodeFingerprint of the code the owner signed in with: the token dies when the code is rotated. */
  readonly code: string;
}

/** How long a token from POST /api/owner/login is valid. */
export const OWNER_TOKEN_TTL_MS = 12 * 60 * 60_000;

/** Where the embedded default keeps the secret it generated, in its data directory. */
export const OWNER_SECRET_FILE = 'owner-token-secret';

/**
 * OWNER_TOKEN_SECRET when set. Otherwise (the embedded default: configFromEnv requires it wherever several processes
 * serve the web) a random secret generated on first start and kept in the data directory, readable by its owner
 * only, so that a restart does not sign every owner out.
 */
export function ownerTokenSecret(config: Pick<ConferenceConfig, 'ownerTokenSecret' | 'dataDir'>): Buffer {
  if (config.ownerTokenSecret !== undefined) return Buffer.from(config.ownerTokenSecret, 'utf8');
  const path = join(config.dataDir, OWNER_SECRET_FILE);
  mkdirSync(config.dataDir, { recursive: true });
  // Written aside and linked into place: the file appears whole or not at all, and a secret kept already stays.
  const draft = `${path}.${process.pid}.tmp`;
  writeFileSync(draft, randomBytes(MIN_SECRET_BYTES).toString('base64url'), { mode: 0o600 });
  try {
    linkSync(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  const kept = Buffer.from(readFileSync(path, 'utf8').trim(), 'utf8');
  if (kept.length < MIN_SECRET_BYTES)
    throw new InvalidOptionsError('OWNER_TOKEN_SECRET', `${path} holds fewer than ${MIN_SECRET_BYTES} bytes`);
  return kept;
}

/** The secret of an `ownerTokenSecret` option: the one given, else the configured or kept one (ownerTokenSecret). */
export function secretOption(
  configured: string | undefined,
  config: Pick<ConferenceConfig, 'ownerTokenSecret' | 'dataDir'>,
): Buffer {
  return configured === undefined ? ownerTokenSecret(config) : Buffer.from(configured, 'utf8');
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
