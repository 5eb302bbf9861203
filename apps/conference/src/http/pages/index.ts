/**
 * The two server-rendered web sites as one Fastify plugin: plain HTML forms (POST, then a 303 redirect to a GET),
 * no front-end framework and no build step; the reservation countdown is the only script.
 *
 * Routes (none can collide with `/api/...`, `/health/...` or `/metrics`: Fastify matches static segments before
 * parameters, so a conference slugged `api`, `manage`, `payment`, `health` or `metrics` would be unreachable on the
 * public site; those slugs are refused, see domain/slug.ts):
 *
 * Every form is read through the schema of the same input on the API (../schemas): a field the schema or the domain
 * refuses shows its message, with a 400.
 *
 * Public registration site (`{slug}` is the conference code):
 *   GET  /[?after|before]                          published conferences, 20 a page (cursor: a conference id)
 *   GET  /{slug}                                   conference home ("Register", "Locate Registration")
 *   GET  /{slug}/register[?orderId]                choose seats (0..20 per type, "Sold out"); with orderId: re-choose
 *   POST /{slug}/register                          RegisterToConference (sets the order's cookie) → /{slug}/registrant
 *   GET  /{slug}/registrant?orderId&orderVersion   checkout: seats, total, countdown, registrant form, payment method
 *   POST /{slug}/registrant                        AssignRegistrantDetails, then start the payment (as /pay)
 *   POST /{slug}/pay                               waits for the reservation: partial → register, free → ConfirmOrder,
 *                                                  else InitiateThirdPartyProcessorPayment → third-party-payment
 *   GET  /{slug}/third-party-payment?paymentId     → the simulated processor, /payment
 *   GET  /{slug}/third-party-payment-accept|reject?paymentId   Complete/CancelThirdPartyProcessorPayment
 *   GET  /{slug}/confirmation?orderId              "Thank you" with the order's access code
 *   GET  /{slug}/expired                           "Your order has expired"
 *   GET|POST /{slug}/order/find                    find an order by e-mail and access code (sets its cookie)
 *   GET  /{slug}/order/{orderId}                   "Registration details"
 *   GET|POST /{slug}/order/{orderId}/seats         "Assign Seats" (AssignSeat / UnassignSeat)
 *   GET|POST /payment                              the simulated third-party payment processor (accept / reject)
 *
 * An order's pages (those taking an orderId, and POST /{slug}/pay) need the order's token in its cookie, else 404.
 *
 * Owner (management) site (`create`, `locate` and `sign-in` are reserved: no conference has those slugs):
 *   GET  /manage                                   "Contoso Conference Management Portal"
 *   GET|POST /manage/sign-in[?slug]                sign in with slug and access code (401 "Invalid access code.")
 *   GET|POST /manage/locate                        log in with e-mail and access code
 *   GET|POST /manage/create                        create a conference → /manage/{slug}, signed in
 *   GET  /manage/{slug}                            "Conference details" (without the owner's session → sign-in)
 *   GET|POST /manage/{slug}/edit
 *   POST /manage/{slug}/publish | /unpublish
 *   POST /manage/{slug}/access-code                rotate the access code (the old one and its sessions end)
 *   POST /manage/{slug}/sign-out
 *   GET|POST /manage/{slug}/seats                  seat types; POST creates one
 *   GET|POST /manage/{slug}/seats/{seatTypeId}     edit a seat type
 *   POST /manage/{slug}/seats/{seatTypeId}/delete  (only while never published)
 *   GET  /manage/{slug}/orders                     "Orders & Attendees"
 *   GET|POST /manage/{slug}/{accessCode}[/...]     the old links: → the sign-in form (not logged)
 *
 * The owner's pages need the owner's session: a cookie under /manage/{slug} that signing in, logging in or creating
 * the conference sets. Sign-ins, look-ups, new orders and new conferences count against the abuse limits
 * (limits/abuse-limits.ts): past them the answer is a 429 page with Retry-After.
 *
 * Register it with `await app.register(pageRoutes, { system })`. Errors a page did not handle become an HTML page:
 * 400 for input the domain rejects, 404, 409 for a state that does not allow the action or a write that lost the
 * race to another one (concurrent-write.ts), 503 with Retry-After while the database is out of reach
 * (backend-unavailable.ts), 500 only for a real fault.
 */
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import {
  isBackendUnavailable,
  UNAVAILABLE_MESSAGE,
  UNAVAILABLE_RETRY_AFTER_SECONDS,
} from '../backend-unavailable.js';
import { CONCURRENT_WRITE_MESSAGE, isConcurrentWrite } from '../concurrent-write.js';
import { type AbuseLimits, abuseLimitsFor } from '../limits/abuse-limits.js';
import { addRateLimitFields } from '../limits/rate-limit-fields.js';
import { TooManyRequestsError } from '../limits/too-many-requests.js';
import { secretOption } from '../owner-token.js';
import { html } from './html.js';
import { page } from './layout.js';
import { ownerSite } from './owner-site.js';
import { publicSite } from './public-site.js';
import { SiteAccess } from './site-access.js';
import { type Site, sendPage } from './support.js';

export { OWNER_TEXT } from './views/owner-page.js';
export { PUBLIC_TEXT } from './views/public-text.js';

export interface PageRoutesOptions {
  readonly system: ConferenceSystem;
  /** The abuse limits, shared with the API; default: as the system's configuration sets them. */
  readonly limits?: AbuseLimits;
  /** The HMAC key of owner sessions and order tokens; default the configured one, else the data directory's. */
  readonly ownerTokenSecret?: string;
}

function statusOf(error: unknown): number {
  if (error instanceof ValidationError) return 400;
  if (error instanceof NotFoundError) return 404;
  if (error instanceof InvalidOperationError || error instanceof ConflictError || isConcurrentWrite(error))
    return 409;
  if (isBackendUnavailable(error)) return 503;
  const status = (error as Partial<FastifyError>).statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

export async function pageRoutes(app: FastifyInstance, options: PageRoutesOptions): Promise<void> {
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  app.setErrorHandler((error, request, reply) => {
    const status = statusOf(error);
    const unavailable = isBackendUnavailable(error);
    if (unavailable) {
      request.log.warn({ err: error }, 'page failed: the database is out of reach');
      void reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
    } else if (status >= 500) request.log.error({ err: error }, 'page failed');
    if (error instanceof TooManyRequestsError) addRateLimitFields(reply, error.headers);
    const text = unavailable
      ? UNAVAILABLE_MESSAGE
      : status >= 500
        ? 'Something went wrong. Please try again.'
        : isConcurrentWrite(error)
          ? CONCURRENT_WRITE_MESSAGE
          : (error as Error).message || 'Bad request.';
    const title = status >= 500 ? 'Error' : 'Sorry';
    return sendPage(
      reply,
      status,
      page({ site: 'public', title, body: html`<h1>${title}</h1><p class="error" role="alert">${text}</p>` }),
    );
  });
  const { system } = options;
  const secret = secretOption(options.ownerTokenSecret, system.config);
  const site: Site = {
    system,
    access: new SiteAccess(secret, system.clock),
    limits: options.limits ?? abuseLimitsFor(system),
  };
  await app.register(publicSite, { site });
  await app.register(ownerSite, { site });
}
