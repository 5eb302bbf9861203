/**
 * Signing in to the owner's pages: by slug and access code (the sign-in form) or by e-mail and access code (the
 * Journey's "locate"), both posted forms that start the owner's session (a cookie); signing out; and the old links
 * with the code in the URL, which now only send the owner to the sign-in form.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Conference } from '../../../domain/conference.js';
import { addRateLimitFields } from '../../limits/rate-limit-fields.js';
import { readForm } from '../../schemas/forms.js';
import { apiInputs, siteInputs } from '../../schemas/inputs.js';
import { isSlugParam } from '../../schemas/text.js';
import { fieldsOf, type Site, seeOther, sendPage } from '../support.js';
import { locatePage, signInPage } from '../views/owner-conference.js';
import { manageUrl, OWNER_TEXT, ownerMessagePage, signInUrl } from '../views/owner-page.js';

/** Whether `given` is the access code, compared in constant time. */
function isCode(given: string, accessCode: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(accessCode);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function ownerSignInRoutes(app: FastifyInstance, site: Site): void {
  const { system, access, limits } = site;
  const { management, queries } = system;

  const signedIn = (conference: Conference) => ({
    id: conference.conferenceId,
    slug: conference.slug,
    accessCode: conference.accessCode,
  });

  app.get('/manage/locate', async (_request, reply) => sendPage(reply, 200, locatePage('')));

  app.post('/manage/locate', async (request, reply) => {
    addRateLimitFields(reply, await limits.charge('signIn', request.ip));
    const { values, problems } = readForm(apiInputs.OwnerLogin, fieldsOf(request.body));
    const { email, accessCode } = values;
    const problem = Object.values(problems)[0];
    if (problem !== undefined) return sendPage(reply, 400, locatePage(email, problem));
    const conferenceId =
      email === '' || accessCode === ''
        ? undefined
        : await limits.checkCode(`owner ${email}`, request.ip, () => queries.ownerLogin(email, accessCode));
    if (conferenceId === undefined) return sendPage(reply, 200, locatePage(email, OWNER_TEXT.locateFailed));
    const conference = await management.get(conferenceId);
    access.signIn(request, reply, signedIn(conference));
    return seeOther(reply, manageUrl(conference));
  });

  app.get('/manage/sign-in', async (request, reply) => {
    const { slug } = fieldsOf(request.query);
    return sendPage(reply, 200, signInPage(isSlugParam(slug) ? slug : ''));
  });

  app.post('/manage/sign-in', async (request, reply) => {
    addRateLimitFields(reply, await limits.charge('signIn', request.ip));
    const { values, problems } = readForm(siteInputs.OwnerSignIn, fieldsOf(request.body));
    const { slug, accessCode } = values;
    const problem = Object.values(problems)[0];
    if (problem !== undefined) return sendPage(reply, 400, signInPage(slug, problem));
    if (slug === '' || accessCode === '')
      return sendPage(reply, 400, signInPage(slug, 'Enter the conference code (slug) and its access code.'));
    const conference = await limits.checkCode(`conference ${slug}`, request.ip, async () => {
      const view = await queries.conferenceBySlug(slug);
      const current = view === undefined ? undefined : await management.get(view.id);
      return current !== undefined && isCode(accessCode, current.accessCode) ? current : undefined;
    });
    if (conference === undefined) return sendPage(reply, 401, signInPage(slug, OWNER_TEXT.invalidAccessCode));
    access.signIn(request, reply, signedIn(conference));
    return seeOther(reply, manageUrl(conference));
  });

  app.post('/manage/:slug/sign-out', async (request, reply) => {
    const { slug } = fieldsOf(request.params);
    if (isSlugParam(slug)) access.signOut(request, reply, slug);
    return seeOther(reply, '/manage');
  });

  // The old links (`/manage/{slug}/{accessCode}/...`) carried the code in the URL: they only lead to the sign-in
  // form now (a slug no conference can have is not found), and their requests are not logged (the log would keep
  // the code).
  for (const url of ['/manage/:slug/:accessCode', '/manage/:slug/:accessCode/*']) {
    app.route({
      method: ['GET', 'POST'],
      url,
      logLevel: 'silent',
      handler: async (request, reply) => {
        const { slug } = fieldsOf(request.params);
        if (!isSlugParam(slug))
          return sendPage(reply, 404, ownerMessagePage('Not found', OWNER_TEXT.notFound));
        return seeOther(reply, signInUrl(slug));
      },
    });
  }
}
