/**
 * The owner's site (the Journey's Conference.Web.Admin): create a conference, sign in with slug (or e-mail) and
 * access code, then under `/manage/{slug}` see and edit the conference, publish or unpublish it, rotate its access
 * code, configure its seat types and see its orders. Those pages need the owner's session (a cookie that signing in
 * sets, site-access.ts): an access code is never part of a URL.
 *
 * Reads that must reflect the owner's own last change (details, seat types, publishing) come from the write side
 * (`management.get`); only finding a conference by slug or login and the orders list use the read models.
 *
 * The routes are in ./routes/owner-*.ts and the pages they render in ./views/owner-*.ts.
 */
import type { FastifyInstance } from 'fastify';
import { ownerConferenceRoutes } from './routes/owner-conference.js';
import { ownerSeatRoutes } from './routes/owner-seats.js';
import { ownerSignInRoutes } from './routes/owner-sign-in.js';
import type { Site } from './support.js';

export async function ownerSite(app: FastifyInstance, { site }: { site: Site }): Promise<void> {
  ownerSignInRoutes(app, site);
  ownerConferenceRoutes(app, site);
  ownerSeatRoutes(app, site);
}
