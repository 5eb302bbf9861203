/**
 * The owner's conference routes: the portal's home, create a conference, see and edit it, publish and unpublish it,
 * rotate its access code. Signing in is in owner-sign-in.ts.
 */
import type { FastifyInstance } from 'fastify';
import { detailsProblems, newConferenceProblems } from '../../../domain/conference.js';
import type { ConferenceDetails } from '../../../domain/contracts.js';
import { ConflictError } from '../../../domain/errors.js';
import { addRateLimitFields } from '../../limits/rate-limit-fields.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { fieldsOf, type Site, seeOther, sendPage } from '../support.js';
import {
  conferenceDetailsPage,
  createConferencePage,
  editConferencePage,
  ownerHomePage,
} from '../views/owner-conference.js';
import { manageUrl, OWNER_TEXT } from '../views/owner-page.js';
import { ownedConferenceOf } from './owner-support.js';

/** Only the detail fields (a form carries others). */
function detailsFrom(values: Readonly<Record<keyof ConferenceDetails, string>>): ConferenceDetails {
  const { name, description, location, tagline, twitterSearch, startDate, endDate } = values;
  return { name, description, location, tagline, twitterSearch, startDate, endDate };
}

export function ownerConferenceRoutes(app: FastifyInstance, site: Site): void {
  const { system, access, limits } = site;
  const { management } = system;

  app.get('/manage', async (_request, reply) => sendPage(reply, 200, ownerHomePage()));

  app.get('/manage/create', async (_request, reply) => sendPage(reply, 200, createConferencePage({}, {})));

  app.post('/manage/create', async (request, reply) => {
    addRateLimitFields(reply, await limits.charge('conferences', request.ip));
    const { values, problems } = readForm(apiInputs.NewConference, fieldsOf(request.body));
    const conference = {
      slug: values.slug,
      owner: { name: values.ownerName, email: values.ownerEmail },
      details: detailsFrom(values),
    };
    const errors = { ...newConferenceProblems(conference), ...problems };
    if (Object.keys(errors).length > 0) return sendPage(reply, 400, createConferencePage(values, errors));
    try {
      const created = await management.create(conference);
      access.signIn(request, reply, { id: created.conferenceId, ...created });
      return seeOther(reply, manageUrl(created));
    } catch (error) {
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
    const { values, problems } = readForm(apiInputs.ConferenceChanges, fieldsOf(request.body));
    const details = detailsFrom(values);
    const errors = { ...detailsProblems(details), ...problems };
    if (Object.keys(errors).length > 0)
      return sendPage(reply, 400, editConferencePage(conference, values, errors));
    await management.update(conference.conferenceId, details);
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
