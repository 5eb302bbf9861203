/**
 * The public registration site (the Journey's Conference.Web.Public, V3 flow): the list of published conferences,
 * a conference's home, registration (choose seats), checkout (registrant details and payment method, with the
 * reservation countdown), payment through the simulated third-party processor, the thank-you page, and finding an
 * order by e-mail and access code to see it and assign its seats to attendees.
 *
 * V3: checkout does not wait for the reservation (only for the order to be priced); starting the payment does. A
 * partial reservation sends the registrant back to registration with the quantities set to what was reserved; a free
 * order is confirmed without a payment.
 *
 * The routes are in ./routes/ and the pages they render in ./views/, by step of the flow.
 */
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { checkoutRoutes } from './routes/checkout.js';
import { conferenceHomeRoutes } from './routes/conference-home.js';
import { orderRoutes } from './routes/order.js';
import { paymentRoutes } from './routes/payment.js';
import { registrationRoutes } from './routes/registration.js';
import { seatAssignmentRoutes } from './routes/seat-assignment.js';

export interface PublicSiteOptions {
  readonly system: ConferenceSystem;
}

export async function publicSite(app: FastifyInstance, { system }: PublicSiteOptions): Promise<void> {
  conferenceHomeRoutes(app, system);
  registrationRoutes(app, system);
  checkoutRoutes(app, system);
  paymentRoutes(app, system);
  orderRoutes(app, system);
  seatAssignmentRoutes(app, system);
}
