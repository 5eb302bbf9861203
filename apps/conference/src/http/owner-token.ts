/**
 * The owner's bearer token: `<payload>.<signature>`, both base64url, the payload `{ conferenceId, exp }` (exp in
 * epoch ms) and the signature its HMAC-SHA256 under a server secret, compared in constant time.
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

function signature(payload: string, secret: Buffer): Buffer {
  return createHmac('sha256', secret).update(payload).digest();
}

export function signOwnerToken(claims: OwnerClaims, secret: Buffer): string {
  const payload = Buffer.from(
    JSON.stringify({ conferenceId: claims.conferenceId, exp: claims.exp }),
    'utf8',
  ).toString('base64url');
  return `${payload}.${signature(payload, secret).toString('base64url')}`;
}

/** The claims of a token signed with `secret` and not expired at `now`, else undefined. */
export function verifyOwnerToken(token: string, secret: Buffer, now: number): OwnerClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 2) return undefined;
  const [payload, signed] = parts as [string, string];
  const expected = signature(payload, secret);
  const given = Buffer.from(signed, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof claims !== 'object' || claims === null) return undefined;
  const { conferenceId, exp } = claims as Record<string, unknown>;
  if (typeof conferenceId !== 'string' || typeof exp !== 'number' || !(exp > now)) return undefined;
  return { conferenceId, exp };
}
