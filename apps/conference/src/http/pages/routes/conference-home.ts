/** The list of published conferences and a conference's home. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ConferenceSystem } from '../../../app/system.js';
import { sendPage } from '../support.js';
import { conferenceHomePage, conferenceListPage } from '../views/conference-home.js';
import { conferenceOf } from './public-support.js';

export function conferenceHomeRoutes(app: FastifyInstance, system: ConferenceSystem): void {
  app.get('/', async (_request, reply) =>
    sendPage(reply, 200, conferenceListPage(await system.queries.publishedConferences())),
  );

  const home = async (request: { params: unknown }, reply: FastifyReply) => {
    const conference = await conferenceOf(system, request.params, reply);
    if (conference === undefined) return reply;
    return sendPage(reply, 200, conferenceHomePage(conference));
  };
  app.get('/:slug', home);
  app.get('/:slug/', home);
}
