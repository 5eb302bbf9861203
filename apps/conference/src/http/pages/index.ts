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
 *   POST /{slug}/register                          RegisterToConference → /{slug}/registrant
 *   GET  /{slug}/registrant?orderId&orderVersion   checkout: seats, total, countdown, registrant form, payment method
 *   POST /{slug}/registrant                        AssignRegistrantDetails, then start the payment (as /pay)
 *   POST /{slug}/pay                               waits for the reservation: partial → register, free → ConfirmOrder,
 *                                                  else InitiateThirdPartyProcessorPayment → third-party-payment
 *   GET  /{slug}/third-party-payment?paymentId     → the simulated processor, /payment
 *   GET  /{slug}/third-party-payment-accept|reject?paymentId   Complete/CancelThirdPartyProcessorPayment
 *   GET  /{slug}/confirmation?orderId              "Thank you" with the order's access code
 *   GET  /{slug}/expired                           "Your order has expired"
 *   GET|POST /{slug}/order/find                    find an order by e-mail and access code
 *   GET  /{slug}/order/{orderId}                   "Registration details"
 *   GET|POST /{slug}/order/{orderId}/seats         "Assign Seats" (AssignSeat / UnassignSeat)
 *   GET|POST /payment                              the simulated third-party payment processor (accept / reject)
 *
 * Owner (management) site:
 *   GET  /manage                                   "Contoso Conference Management Portal"
 *   GET|POST /manage/locate                        log in with e-mail and access code
 *   GET|POST /manage/create                        create a conference → /manage/{slug}/{accessCode}
 *   GET  /manage/{slug}/{accessCode}               "Conference details" (401 "Invalid access code." on a wrong code)
 *   GET|POST /manage/{slug}/{accessCode}/edit
 *   POST /manage/{slug}/{accessCode}/publish | /unpublish
 *   GET|POST /manage/{slug}/{accessCode}/seats     seat types; POST creates one
 *   GET|POST /manage/{slug}/{accessCode}/seats/{seatTypeId}          edit a seat type
 *   POST /manage/{slug}/{accessCode}/seats/{seatTypeId}/delete       (only while never published)
 *   GET  /manage/{slug}/{accessCode}/orders        "Orders & Attendees"
 *
 * Register it with `await app.register(pageRoutes, { system })`. Errors a page did not handle become an HTML page:
 * 400 for input the domain rejects, 404, 409 for a state that does not allow the action or a write that lost the
 * race to another one (concurrent-write.ts), 500 only for a real fault.
 */
import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { CONCURRENT_WRITE_MESSAGE, isConcurrentWrite } from '../concurrent-write.js';
import { html } from './html.js';
import { page } from './layout.js';
import { ownerSite } from './owner-site.js';
import { publicSite } from './public-site.js';
import { sendPage } from './support.js';

export { OWNER_TEXT } from './views/owner-page.js';
export { PUBLIC_TEXT } from './views/public-text.js';

export interface PageRoutesOptions {
  readonly system: ConferenceSystem;
}

function statusOf(error: unknown): number {
  if (error instanceof ValidationError) return 400;
  if (error instanceof NotFoundError) return 404;
  if (error instanceof InvalidOperationError || error instanceof ConflictError || isConcurrentWrite(error))
    return 409;
  const status = (error as Partial<FastifyError>).statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500;
}

export async function pageRoutes(app: FastifyInstance, options: PageRoutesOptions): Promise<void> {
  await app.register(formbody, { bodyLimit: 64 * 1024 });
  app.setErrorHandler((error, request, reply) => {
    const status = statusOf(error);
    if (status >= 500) request.log.error({ err: error }, 'page failed');
    const text =
      status >= 500
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
  await app.register(publicSite, { system: options.system });
  await app.register(ownerSite, { system: options.system });
}
