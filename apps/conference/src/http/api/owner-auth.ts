/**
 * The owner's bearer token: logging in hands one out, and the owner's operations require one for their conference,
 * signed for its current access code (rotating the code ends the tokens signed for the old one).
 */
import type { FastifyRequest } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import type { AbuseLimits } from '../limits/abuse-limits.js';
import { isForAccessCode, OWNER_TOKEN_TTL_MS, ownerTokenFor, verifyOwnerToken } from '../owner-token.js';
import { HttpError } from './errors.js';
import { bearerToken, type Handlers, param } from './support.js';

export interface OwnerTokenOptions {
  /** The HMAC key of owner and order tokens; default the configured one, else the data directory's (ownerTokenSecret). */
  readonly ownerTokenSecret?: string;
  /** How long an owner token is valid; default 12 hours. */
  readonly ownerTokenTtlMs?: number;
}

export function ownerAuth(
  system: ConferenceSystem,
  secret: Buffer,
  limits: AbuseLimits,
  options: OwnerTokenOptions,
) {
  const { queries, clock } = system;
  const tokenTtlMs = options.ownerTokenTtlMs ?? OWNER_TOKEN_TTL_MS;

  /** A token for the conference, valid while its access code is `accessCode`. */
  function ownerToken(conferenceId: string, accessCode: string): string {
    return ownerTokenFor(conferenceId, accessCode, clock.now() + tokenTtlMs, secret);
  }

  /** The onRequest hook of the owner's operations: a valid token for the conference `{id}`, else 401 or 403. */
  async function ownerOnly(request: FastifyRequest): Promise<void> {
    const token = bearerToken(request);
    if (token === undefined)
      throw new HttpError(401, 'An owner token is required (Authorization: Bearer <token>).', true);
    const claims = verifyOwnerToken(token, secret, clock.now());
    if (claims === undefined) throw new HttpError(401, 'The owner token is invalid or has expired.', true);
    const conferenceId = param(request, 'id').toLowerCase();
    if (claims.conferenceId !== conferenceId)
      throw new HttpError(403, 'The owner token is for another conference.');
    const view = await queries.conference(conferenceId);
    if (view !== undefined && !isForAccessCode(claims, view.accessCode, secret))
      throw new HttpError(
        401,
        'The access code has changed since this owner token was issued: log in again.',
        true,
      );
  }

  const handlers: Pick<Handlers, 'ownerLogin'> = {
    async ownerLogin(request) {
      const { email, accessCode } = request.body as { email: string; accessCode: string };
      const conferenceId = await limits.checkCode(`owner ${email.trim()}`, request.ip, () =>
        queries.ownerLogin(email, accessCode),
      );
      if (conferenceId === undefined)
        throw new HttpError(401, 'Could not locate a conference with the provided email and access code.');
      return { token: ownerToken(conferenceId, accessCode), conferenceId };
    },
  };
  return { ownerOnly, ownerToken, handlers };
}
