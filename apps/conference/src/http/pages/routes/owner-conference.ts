/**
 * The owner's conference routes: the portal's home, log in with e-mail and access code, create a conference, see
 * and edit it, publish and unpublish it.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import type { ConferenceDetails } from '../../../domain/contracts.js';
import { ConflictError, ValidationError } from '../../../domain/errors.js';
import { type Fields, fieldsOf, seeOther, sendPage } from '../support.js';
import {
  conferenceDetailsPage,
  createConferencePage,
  editConferencePage,
  locatePage,
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

export function ownerConferenceRoutes(app: FastifyInstance, system: ConferenceSystem): void {
  const { management, queries } = system;

  app.get('/manage', async (_request, reply) => sendPage(reply, 200, ownerHomePage()));

  app.get('/manage/locate', async (_request, reply) => sendPage(reply, 200, locatePage('')));

  app.post('/manage/locate', async (request, reply) => {
    const values = fieldsOf(request.body);
    const email = (values.email ?? '').trim();
    const accessCode = (values.accessCode ?? '').trim();
    const conferenceId =
      email === '' || accessCode === '' ? undefined : await queries.ownerLogin(email, accessCode);
    if (conferenceId === undefined) return sendPage(reply, 200, locatePage(email, OWNER_TEXT.locateFailed));
    return seeOther(reply, manageUrl(await management.get(conferenceId)));
  });

  app.get('/manage/create', async (_request, reply) => sendPage(reply, 200, createConferencePage({}, {})));

  app.post('/manage/create', async (request, reply) => {
    const values = fieldsOf(request.body);
    try {
      const created = await management.create({
        slug: (values.slug ?? '').trim(),
        owner: { name: (values.ownerName ?? '').trim(), email: (values.ownerEmail ?? '').trim() },
        details: detailsFrom(values),
      });
      return seeOther(reply, `/manage/${created.slug}/${created.accessCode}`);
    } catch (error) {
      if (error instanceof ValidationError)
        return sendPage(reply, 400, createConferencePage(values, error.fields));
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
    app.post(`/manage/:slug/:accessCode/${action}`, async (request, reply) => {
      const conference = await ownedConferenceOf(system, request.params, reply);
      if (conference === undefined) return reply;
      if (action === 'publish') await management.publish(conference.conferenceId);
      else await management.unpublish(conference.conferenceId);
      return seeOther(reply, manageUrl(conference));
    });
  }
}
