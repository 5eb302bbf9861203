/** The list of published conferences and a conference's home. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import { readForm } from '../../schemas/forms.js';
import { siteInputs } from '../../schemas/inputs.js';
import { fieldsOf, sendPage } from '../support.js';
import { conferenceHomePage, conferenceListPage } from '../views/conference-home.js';
import { messagePage } from '../views/public-page.js';
import { conferenceOf } from './public-support.js';

/** How many conferences the list shows at a time. */
export const CONFERENCES_PER_PAGE = 20;

export function conferenceHomeRoutes(app: FastifyInstance, system: ConferenceSystem): void {
  // A page of the published conferences (`?after=` / `?before=` a conference id, as its links say).
  app.get('/', async (request, reply) => {
    const { values, problems } = readForm(siteInputs.ConferenceListQuery, fieldsOf(request.query));
    const { after, before } = values;
    if (Object.keys(problems).length > 0 || (after !== '' && before !== ''))
      return sendPage(
        reply,
        400,
        messagePage(undefined, 'Conferences', 'This page of the list is not valid.'),
      );
    const cursor = before !== '' ? { before } : after !== '' ? { after } : {};
    const page = await system.queries.publishedConferences(cursor, CONFERENCES_PER_PAGE);
    return sendPage(reply, 200, conferenceListPage(page));
  });

  const home = async (request: { params: unknown }, reply: FastifyReply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, conferenceHomePage(conference));
  };
  app.get('/:slug', home);
  app.get('/:slug/', home);
}
