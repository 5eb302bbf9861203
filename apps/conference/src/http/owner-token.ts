/**
 * The owner's bearer token: `<payload>.<signature>`, both base64url, the payload `{ conferenceId, exp }` (exp in
 * epoch ms) and the signature its HMAC-SHA256 under a server secret, compared in constant time.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface OwnerClaims {
  readonly conferenceId: string;
  /** Epoch milliseconds after which the token is refused. */
  readonly exp: number;
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
