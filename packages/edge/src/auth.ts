import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@stratus/core';
import { createRemoteJWKSet, type JWTPayload, errors as joseErrors, jwtVerify } from 'jose';
import type { AuthConfig } from './config.js';
import type { RequestView } from './request-view.js';

/** What an authenticator said of a request: the headers to send upstream, or why not (a 401). */
export type AuthVerdict =
  | { readonly ok: true; readonly headers: readonly string[] }
  | { readonly ok: false; readonly challenge: string; readonly detail: string };

export interface Authenticator {
  /** Headers the gateway sets from what it verified: a client's own copies of them are dropped. */
  readonly owns: ReadonlySet<string>;
  authenticate(request: RequestView): Promise<AuthVerdict>;
}

const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
/** Verified tokens kept: beyond it the oldest go first. */
const VERIFIED_CACHE_SIZE = 10_000;
/** Whether a text may be a header value: no control characters but tab (CR, LF and NUL above all). */
function headerSafe(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 32 && code !== 9) || code === 127) return false;
  }
  return true;
}

export function authenticatorOf(config: AuthConfig, clock: Clock): Authenticator {
  return 'jwt' in config ? jwtAuthenticator(config.jwt, clock) : apiKeyAuthenticator(config.apiKeys);
}

type JwtConfig = Extract<AuthConfig, { jwt: unknown }>['jwt'];

/**
 * Bearer JWTs checked against a JWKS: signature (asymmetric algorithms only, so `alg: none` and HMAC tokens signed
 * with a public key are refused), expiry and not-before with a tolerance, issuer and audience. The key set is fetched
 * on first use and again for an unknown key id (at most every `jwksRefreshMinMs`, 30 s by default), so a rotation at the issuer needs nothing here.
 * Verified tokens are kept until they expire, so a client's next requests cost a map lookup instead of a signature
 * check; a token is never kept past its `exp`.
 */
function jwtAuthenticator(config: JwtConfig, clock: Clock): Authenticator {
  const keys = createRemoteJWKSet(new URL(config.jwksUrl), {
    cooldownDuration: config.jwksRefreshMinMs ?? 30_000,
    timeoutDuration: 5_000,
  });
  const claims = Object.entries(config.claimsToHeaders ?? {}).map(
    ([claim, header]) => [claim, header.toLowerCase()] as const,
  );
  const verified = new Map<string, { headers: string[]; expiresAt: number }>();
  const challenge = 'Bearer error="invalid_token"';
  return {
    owns: new Set(claims.map(([, header]) => header)),
    async authenticate(request) {
      const token =
        config.cookie === undefined
          ? bearerOf(request.header('authorization'))
          : request.cookies().get(config.cookie);
      if (token === undefined)
        return { ok: false, challenge: 'Bearer', detail: 'A bearer token is required.' };
      const now = clock.now();
      const kept = verified.get(token);
      if (kept !== undefined && kept.expiresAt > now) return { ok: true, headers: kept.headers };
      if (kept !== undefined) verified.delete(token);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          algorithms: config.algorithms ?? DEFAULT_ALGORITHMS,
          ...(config.issuer === undefined ? {} : { issuer: config.issuer }),
          ...(config.audience === undefined ? {} : { audience: config.audience }),
          clockTolerance: config.clockToleranceSec ?? 30,
          currentDate: new Date(now),
        }));
      } catch (error) {
        return { ok: false, challenge, detail: describeJoseError(error) };
      }
      const headers: string[] = [];
      for (const [claim, header] of claims) {
        const value = payload[claim];
        if (value === undefined) continue;
        const text = typeof value === 'string' ? value : JSON.stringify(value);
        if (headerSafe(text)) headers.push(header, text);
      }
      // Kept until the token expires (at most an hour when it says nothing), never past it.
      const expiresAt = typeof payload.exp === 'number' ? payload.exp * 1000 : now + 3_600_000;
      if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value as string);
      verified.set(token, { headers, expiresAt });
      return { ok: true, headers };
    },
  };
}

function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined || header.length < 8 || header.slice(0, 7).toLowerCase() !== 'bearer ')
    return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}

/** What failed, in words safe to show the client (never the token or its claims). */
function describeJoseError(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'The token has expired.';
  if (error instanceof joseErrors.JWTClaimValidationFailed)
    return `The token's "${error.claim}" claim is not accepted.`;
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return "The token's algorithm is not accepted.";
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'No known key signed the token.';
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'The token signature is not valid.';
  if (error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid)
    return 'The signing keys could not be read.';
  return 'The token is not valid.';
}

type ApiKeysConfig = Extract<AuthConfig, { apiKeys: unknown }>['apiKeys'];

/**
 * API keys in a header, checked against their SHA-256 digests (the config holds no key itself). The consumer a key
 * names goes upstream as `x-consumer`.
 */
function apiKeyAuthenticator(config: ApiKeysConfig): Authenticator {
  const header = (config.header ?? 'x-api-key').toLowerCase();
  const digests = Object.entries(config.keys).map(
    ([digest, consumer]) => [Buffer.from(digest.slice('sha256:'.length), 'hex'), consumer] as const,
  );
  return {
    owns: new Set(['x-consumer', header]),
    async authenticate(request) {
      const key = request.header(header);
      if (key === undefined || key === '')
        return { ok: false, challenge: 'ApiKey', detail: `The ${header} header is required.` };
      const digest = createHash('sha256').update(key).digest();
      // Every digest is compared, in constant time each, so timing says nothing of which came close.
      let consumer: string | undefined;
      for (const [expected, name] of digests) if (timingSafeEqual(digest, expected)) consumer = name;
      if (consumer === undefined)
        return { ok: false, challenge: 'ApiKey', detail: 'The API key is not valid.' };
      return { ok: true, headers: ['x-consumer', consumer] };
    },
  };
}
