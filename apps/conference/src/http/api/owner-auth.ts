/** The owner's bearer token: logging in hands one out, and the owner's operations require one for their conference. */
import type { FastifyRequest } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { OWNER_TOKEN_TTL_MS, ownerTokenSecret, signOwnerToken, verifyOwnerToken } from '../owner-token.js';
import { HttpError } from './errors.js';
import { type Handlers, param } from './support.js';

export interface OwnerTokenOptions {
  /** The HMAC key of owner tokens; default the configured one, else the data directory's (ownerTokenSecret). */
  readonly ownerTokenSecret?: string;
  /** How long an owner token is valid; default 12 hours. */
  readonly ownerTokenTtlMs?: number;
}

export function ownerAuth(system: ConferenceSystem, options: OwnerTokenOptions) {
  const { queries, clock } = system;
  const secret =
    options.ownerTokenSecret === undefined
      ? ownerTokenSecret(system.config)
      : Buffer.from(options.ownerTokenSecret);
  const tokenTtlMs = options.ownerTokenTtlMs ?? OWNER_TOKEN_TTL_MS;

  /** The onRequest hook of the owner's operations: a valid token for the conference `{id}`, else 401 or 403. */
  async function ownerOnly(request: FastifyRequest): Promise<void> {
    const match = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? '');
    if (match === null)
      throw new HttpError(401, 'An owner token is required (Authorization: Bearer <token>).', true);
    const claims = verifyOwnerToken(match[1] as string, secret, clock.now());
    if (claims === undefined) throw new HttpError(401, 'The owner token is invalid or has expired.', true);
    if (claims.conferenceId !== param(request, 'id').toLowerCase())
      throw new HttpError(403, 'The owner token is for another conference.');
  }

  const handlers: Pick<Handlers, 'ownerLogin'> = {
    async ownerLogin(request) {
      const { email, accessCode } = request.body as { email: string; accessCode: string };
      const conferenceId = await queries.ownerLogin(email, accessCode);
      if (conferenceId === undefined)
        throw new HttpError(401, 'Could not locate a conference with the provided email and access code.');
      return { token: signOwnerToken({ conferenceId, exp: clock.now() + tokenTtlMs }, secret), conferenceId };
    },
  };
  return { ownerOnly, handlers };
}
