/**
 * The owner's conference routes: the portal's home, create a conference, see and edit it, publish and unpublish it,
 * rotate its access code. Signing in is in owner-sign-in.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceDetails } from '../../../domain/contracts.js';
import { ConflictError, ValidationError } from '../../../domain/errors.js';
import { type Fields, fieldsOf, type Site, seeOther, sendPage } from '../support.js';
import {
  conferenceDetailsPage,
  createConferencePage,
  editConferencePage,
  ownerHomePage,
} from '../views/owner-conference.js';
import { manageUrl, OWNER_TEXT } from '../views/owner-page.js';
import { ownedConferenceOf } from './owner-support.js';

function detailsFrom(values: Fields): ConferenceDetails {
  const text = (name: string) => (values[name] ?? '').trim();
  return {
    name: text('name'),
    description: text('description'),
    location: text('location'),
    tagline: text('tagline'),
    twitterSearch: text('twitterSearch'),
    startDate: text('startDate'),
    endDate: text('endDate'),
  };
}

export function ownerConferenceRoutes(app: FastifyInstance, site: Site): void {
  const { system, access, limits } = site;
  const { management } = system;

  app.get('/manage', async (_request, reply) => sendPage(reply, 200, ownerHomePage()));

  app.get('/manage/create', async (_request, reply) => sendPage(reply, 200, createConferencePage({}, {})));

  app.post('/manage/create', async (request, reply) => {
    void reply.headers(await limits.charge('conferences', request.ip));
    const values = fieldsOf(request.body);
    try {
      const created = await management.create({
        slug: (values.slug ?? '').trim(),
        owner: { name: (values.ownerName ?? '').trim(), email: (values.ownerEmail ?? '').trim() },
        details: detailsFrom(values),
      });
      access.signIn(request, reply, { id: created.conferenceId, ...created });
      return seeOther(reply, manageUrl(created));
    } catch (error) {
      if (error instanceof ValidationError)
        return sendPage(reply, 400, createConferencePage(values, error.fields));
      if (error instanceof ConflictError)
        return sendPage(reply, 409, createConferencePage(values, { slug: OWNER_TEXT.slugTaken }));
      throw error;
    }
  });

  app.get('/manage/:slug', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, conferenceDetailsPage(conference));
  });

  app.get('/manage/:slug/edit', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, editConferencePage(conference, { ...conference.details }, {}));
  });

  app.post('/manage/:slug/edit', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    try {
      await management.update(conference.conferenceId, detailsFrom(values));
    } catch (error) {
      if (error instanceof ValidationError)
        return sendPage(reply, 400, editConferencePage(conference, values, error.fields));
      throw error;
    }
    return seeOther(reply, manageUrl(conference));
  });

  for (const action of ['publish', 'unpublish'] as const) {
    app.post(`/manage/:slug/${action}`, async (request, reply) => {
      const conference = await ownedConferenceOf(site, request, reply);
      if (conference === undefined) return reply;
      if (action === 'publish') await management.publish(conference.conferenceId);
      else await management.unpublish(conference.conferenceId);
      return seeOther(reply, manageUrl(conference));
    });
  }

  app.post('/manage/:slug/access-code', async (request, reply) => {
    const conference = await ownedConferenceOf(site, request, reply);
    if (conference === undefined) return reply;
    const { conferenceId, slug } = conference;
    const accessCode = await management.rotateAccessCode(conferenceId);
    // The old code's session ends with it: this one goes on under the new code.
    access.signIn(request, reply, { id: conferenceId, slug, accessCode });
    return seeOther(reply, manageUrl(conference));
  });
}
