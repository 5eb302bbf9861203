/**
 * The public registration site (the Journey's Conference.Web.Public, V3 flow): the list of published conferences,
 * a conference's home, registration (choose seats), checkout (registrant details and payment method, with the
 * reservation countdown), payment through the simulated third-party processor, the thank-you page, and finding an
 * order by e-mail and access code to see it and assign its seats to attendees. An order's pages need its token, which
 * the browser keeps in a cookie (site-access.ts): without it they answer 404.
 *
 * V3: checkout does not wait for the reservation (only for the order to be priced); starting the payment does. A
 * partial reservation sends the registrant back to registration with the quantities set to what was reserved; a free
 * order is confirmed without a payment.
 *
 * The routes are in ./routes/ and the pages they render in ./views/, by step of the flow.
 */
import type { FastifyInstance } from 'fastify';
import { checkoutRoutes } from './routes/checkout.js';
import { conferenceHomeRoutes } from './routes/conference-home.js';
import { orderRoutes } from './routes/order.js';
import { paymentRoutes } from './routes/payment.js';
import { registrationRoutes } from './routes/registration.js';
import { seatAssignmentRoutes } from './routes/seat-assignment.js';
import type { Site } from './support.js';

export async function publicSite(app: FastifyInstance, { site }: { site: Site }): Promise<void> {
  conferenceHomeRoutes(app, site.system);
  registrationRoutes(app, site);
  checkoutRoutes(app, site);
  paymentRoutes(app, site.system, site.access);
  orderRoutes(app, site);
  seatAssignmentRoutes(app, site);
}
