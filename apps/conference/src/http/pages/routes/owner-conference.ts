/**
 * The owner's conference routes: the portal's home, log in with e-mail and access code, create a conference, see
 * and edit it, publish and unpublish it.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import { detailsProblems, newConferenceProblems } from '../../../domain/conference.js';
import type { ConferenceDetails } from '../../../domain/contracts.js';
import { ConflictError } from '../../../domain/errors.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs } from '../../schemas/inputs.js';
import { fieldsOf, seeOther, sendPage } from '../support.js';
import {
  conferenceDetailsPage,
  createConferencePage,
  editConferencePage,
  locatePage,
  ownerHomePage,
} from '../views/owner-conference.js';
import { manageUrl, OWNER_TEXT } from '../views/owner-page.js';
import { ownedConferenceOf } from './owner-support.js';

/** Only the detail fields (a form carries others). */
function detailsFrom(values: Readonly<Record<keyof ConferenceDetails, string>>): ConferenceDetails {
  const { name, description, location, tagline, twitterSearch, startDate, endDate } = values;
  return { name, description, location, tagline, twitterSearch, startDate, endDate };
}

export function ownerConferenceRoutes(app: FastifyInstance, system: ConferenceSystem): void {
  const { management, queries } = system;

  app.get('/manage', async (_request, reply) => sendPage(reply, 200, ownerHomePage()));

  app.get('/manage/locate', async (_request, reply) => sendPage(reply, 200, locatePage('')));

  app.post('/manage/locate', async (request, reply) => {
    const { values, problems } = readForm(apiInputs.OwnerLogin, fieldsOf(request.body));
    const { email, accessCode } = values;
    const problem = Object.values(problems)[0];
    if (problem !== undefined) return sendPage(reply, 400, locatePage(email, problem));
    const conferenceId =
      email === '' || accessCode === '' ? undefined : await queries.ownerLogin(email, accessCode);
    if (conferenceId === undefined) return sendPage(reply, 200, locatePage(email, OWNER_TEXT.locateFailed));
    return seeOther(reply, manageUrl(await management.get(conferenceId)));
  });

  app.get('/manage/create', async (_request, reply) => sendPage(reply, 200, createConferencePage({}, {})));

  app.post('/manage/create', async (request, reply) => {
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
      return seeOther(reply, `/manage/${created.slug}/${created.accessCode}`);
    } catch (error) {
      if (error instanceof ConflictError)
        return sendPage(reply, 409, createConferencePage(values, { slug: OWNER_TEXT.slugTaken }));
      throw error;
    }
  });

  app.get('/manage/:slug/:accessCode', async (request, reply) => {
    const conference = await ownedConferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, conferenceDetailsPage(conference));
  });

  app.get('/manage/:slug/:accessCode/edit', async (request, reply) => {
    const conference = await ownedConferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, editConferencePage(conference, { ...conference.details }, {}));
  });

  app.post('/manage/:slug/:accessCode/edit', async (request, reply) => {
    const conference = await ownedConferenceOf(system, request.params, reply);
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
    app.post(`/manage/:slug/:accessCode/${action}`, async (request, reply) => {
      const conference = await ownedConferenceOf(system, request.params, reply);
      if (conference === undefined) return reply;
      if (action === 'publish') await management.publish(conference.conferenceId);
      else await management.unpublish(conference.conferenceId);
      return seeOther(reply, manageUrl(conference));
    });
  }
}
