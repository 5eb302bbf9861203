/** What the owner's routes share: the conference of the URL, checked against its access code. */
import type { FastifyReply } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import type { Conference } from '../../../domain/conference.js';
import { isSlugParam } from '../../schemas/text.js';
import { fieldsOf, sendPage, VIEW_WAIT_MS } from '../support.js';
import { OWNER_TEXT, ownerMessagePage } from '../views/owner-page.js';

/**
 * The conference of the `slug` and `accessCode` route parameters, from the write side, or the 404/401 page sent.
 * The slug is looked up in the conference view, waited for briefly: a conference just created reaches it a
 * moment later.
 */
export async function ownedConferenceOf(
  system: ConferenceSystem,
  params: unknown,
  reply: FastifyReply,
): Promise<Conference | undefined> {
  const { slug, accessCode } = fieldsOf(params);
  const view = isSlugParam(slug)
    ? await system.waitFor(() => system.queries.conferenceBySlug(slug), VIEW_WAIT_MS)
    : undefined;
  if (view === undefined) {
    sendPage(reply, 404, ownerMessagePage('Not found', OWNER_TEXT.notFound));
    return undefined;
  }
  if (view.accessCode !== accessCode) {
    sendPage(reply, 401, ownerMessagePage('Unauthorized', OWNER_TEXT.invalidAccessCode));
    return undefined;
  }
  return system.management.get(view.id);
}
