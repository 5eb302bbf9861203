/**
 * The owner's site (the Journey's Conference.Web.Admin): create a conference, log in with e-mail and access code,
 * then under `/manage/{slug}/{accessCode}` see and edit the conference, publish or unpublish it, configure its seat
 * types and see its orders. The access code in the URL must be the conference's, exactly (else 401).
 *
 * Reads that must reflect the owner's own last change (details, seat types, publishing) come from the write side
 * (`management.get`); only finding a conference by slug or login and the orders list use the read models.
 *
 * The routes are in ./routes/owner-*.ts and the pages they render in ./views/owner-*.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { ownerConferenceRoutes } from './routes/owner-conference.js';
import { ownerSeatRoutes } from './routes/owner-seats.js';

export interface OwnerSiteOptions {
  readonly system: ConferenceSystem;
}

export async function ownerSite(app: FastifyInstance, { system }: OwnerSiteOptions): Promise<void> {
  ownerConferenceRoutes(app, system);
  ownerSeatRoutes(app, system);
}
