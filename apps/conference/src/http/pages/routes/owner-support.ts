/** What the owner's routes share: the conference of the URL, for its owner's session only. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Conference } from '../../../domain/conference.js';
import { isSlugParam } from '../../schemas/text.js';
import { fieldsOf, type Site, seeOther, sendPage, VIEW_WAIT_MS } from '../support.js';
import { OWNER_TEXT, ownerMessagePage, signInUrl } from '../views/owner-page.js';

/**
 * The conference of the `slug` route parameter, from the write side, when the request carries its owner's session
 * (else a redirect to the sign-in form is sent), or the 404 page sent. The slug is looked up in the conference view,
 * waited for briefly: a conference just created reaches it a moment later.
 */
export async function ownedConferenceOf(
  { system, access }: Site,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Conference | undefined> {
  const { slug } = fieldsOf(request.params);
  const view = isSlugParam(slug)
    ? await system.waitFor(() => system.queries.conferenceBySlug(slug), VIEW_WAIT_MS)
    : undefined;
  if (view === undefined) {
    sendPage(reply, 404, ownerMessagePage('Not found', OWNER_TEXT.notFound));
    return undefined;
  }
  const conference = await system.management.get(view.id);
  if (!access.isOwner(request, { id: conference.conferenceId, accessCode: conference.accessCode })) {
    seeOther(reply, signInUrl(conference.slug));
    return undefined;
  }
  return conference;
}
