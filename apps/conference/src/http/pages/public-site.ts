/**
 * The public registration site (the Journey's Conference.Web.Public, V3 flow): the list of published conferences,
 * a conference's home, registration (choose seats), checkout (registrant details and payment method, with the
 * reservation countdown), payment through the simulated third-party processor, the thank-you page, and finding an
 * order by e-mail and access code to see it and assign its seats to attendees.
 *
 * V3: checkout does not wait for the reservation (only for the order to be priced); starting the payment does. A
 * partial reservation sends the registrant back to registration with the quantities set to what was reserved; a free
 * order is confirmed without a payment.
 */
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { settledAssignments } from '../../app/queries.js';
import type { ConferenceSystem } from '../../app/system.js';
import { MAX_SEATS_PER_TYPE, type PersonalInfo } from '../../domain/contracts.js';
import { InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { EMAIL_PATTERN } from '../../domain/personal-info.js';
import type { ConferenceView, SeatTypeView } from '../../read-models/conference-view.js';
import type { AssignmentsView, OrderView } from '../../read-models/order-view.js';
import { type HtmlValue, html, type SafeHtml } from './html.js';
import { fieldError, formatRemaining, money, page } from './layout.js';
import {
  type Fields,
  fieldsOf,
  isId,
  isLocalPath,
  seeOther,
  sendPage,
  VIEW_WAIT_MS,
  wholeNumber,
  withQuery,
} from './support.js';

export interface PublicSiteOptions {
  readonly system: ConferenceSystem;
}

/** The messages the Journey shows; tests and the browser test look for them. */
export const PUBLIC_TEXT = {
  invalidConference: 'Invalid conference code.',
  soldOut: 'Sold out',
  partiallyFulfilled:
    'Could not reserve all the requested seats. The seat quantity is set to the available seats.',
  itemsRequired: 'One or more items are required.',
  seatTypeGone: 'A seat type you chose is no longer offered.',
  badQuantity: `Choose from 0 to ${MAX_SEATS_PER_TYPE} seats of each type.`,
  orderUnknown: 'Cannot determine the state of the registration',
  reservationUnknown: 'Cannot determine the state of the seat reservation',
  paymentUnknown: 'Cannot determine the state of the payment',
  completed: 'Your order has been completed',
  expired: 'Your order has expired',
  released: 'The seats reserved for it have been released.',
  emailsDiffer: 'E-Mail addresses do not match.',
  confirmEmail: 'Please confirm the e-mail address.',
  paymentRejected: 'The payment was not accepted. You can try again.',
  orderNotFound: 'Could not find a registration with this e-mail address and order code.',
  notOpen: 'This conference is not open for registration.',
} as const;

type Conf = ConferenceView;

/** One row of the registration form. */
interface RegisterLine {
  readonly seat: SeatTypeView;
  /** Free seats plus those this order already holds. */
  readonly available: number;
  readonly max: number;
  selected: number;
  partial: boolean;
}

/** How many seats an order holds or asks for on one line, as its priced totals count them. */
function lineQuantity(order: OrderView, line: OrderView['lines'][number]): number {
  return order.status === 'pending' ? line.requested : line.reserved;
}

function isExpired(order: OrderView, now: number): boolean {
  return (
    order.status === 'expired' || (order.reservationExpiresAt !== null && order.reservationExpiresAt < now)
  );
}

export async function publicSite(app: FastifyInstance, { system }: PublicSiteOptions): Promise<void> {
  const { queries, commands, clock } = system;

  // -------------------------------------------------------------------------------------------------------------
  // Rendering helpers

  function conferencePage(
    reply: FastifyReply,
    status: number,
    conference: Conf,
    title: string,
    body: HtmlValue,
    extra: { refreshSeconds?: number; countdown?: boolean } = {},
  ): FastifyReply {
    return sendPage(reply, status, page({ site: 'public', conference, title, body, ...extra }));
  }

  function message(
    reply: FastifyReply,
    status: number,
    conference: Conf | undefined,
    title: string,
    text: string,
  ) {
    const body = html`<h1>${title}</h1><p class="error">${text}</p>`;
    return sendPage(
      reply,
      status,
      page({ site: 'public', title, body, ...(conference ? { conference } : {}) }),
    );
  }

  /** The conference of the `slug` route parameter, or a 404 page already sent (the Journey's tenant rule). */
  async function conferenceOf(params: unknown, reply: FastifyReply): Promise<Conf | undefined> {
    const { slug } = fieldsOf(params);
    const conference = slug === undefined ? undefined : await queries.conferenceBySlug(slug);
    if (conference === undefined) {
      message(reply, 404, undefined, 'Not found', PUBLIC_TEXT.invalidConference);
      return undefined;
    }
    return conference;
  }

  /** An order of this conference, waiting up to 5 s for one that satisfies `ready`. */
  function waitForOrder(
    conference: Conf,
    orderId: string,
    ready: (order: OrderView) => boolean,
  ): Promise<OrderView | undefined> {
    return system.waitFor(async () => {
      const order = await queries.order(orderId);
      return order !== undefined && order.conferenceId === conference.id && ready(order) ? order : undefined;
    }, VIEW_WAIT_MS);
  }

  async function orderOf(conference: Conf, orderId: string): Promise<OrderView | undefined> {
    const order = await queries.order(orderId);
    return order?.conferenceId === conference.id ? order : undefined;
  }

  const seatName = (conference: Conf, seatTypeId: string) =>
    conference.seatTypes.find((seat) => seat.id === seatTypeId)?.name ?? 'Seat';

  function orderUnknown(reply: FastifyReply, conference: Conf, retryUrl: string) {
    return conferencePage(
      reply,
      200,
      conference,
      'Registration',
      html`<h1>${PUBLIC_TEXT.orderUnknown}</h1>
<p>We are still processing your registration. This page refreshes in a few seconds.</p>
<p><a class="button" href="${retryUrl}">Try again</a></p>`,
      { refreshSeconds: 5 },
    );
  }

  function completedOrder(reply: FastifyReply, conference: Conf, order: OrderView) {
    return conferencePage(
      reply,
      200,
      conference,
      'Order completed',
      html`<h1>${PUBLIC_TEXT.completed}</h1>
<p>The order can no longer be changed.</p>
<p><a class="button" href="/${conference.slug}/order/${order.orderId}">Go to my registration</a></p>`,
    );
  }

  const expiredUrl = (conference: Conf, orderId: string) =>
    withQuery(`/${conference.slug}/expired`, { orderId });
  const registerUrl = (conference: Conf, orderId: string) =>
    withQuery(`/${conference.slug}/register`, { orderId });
  const registrantUrl = (conference: Conf, orderId: string, orderVersion: number, rejected = false) =>
    withQuery(`/${conference.slug}/registrant`, {
      orderId,
      orderVersion,
      ...(rejected ? { paymentRejected: 1 } : {}),
    });
  const confirmationUrl = (conference: Conf, orderId: string) =>
    withQuery(`/${conference.slug}/confirmation`, { orderId });

  function countdown(conference: Conf, order: OrderView): SafeHtml {
    if (order.reservationExpiresAt === null) return html``;
    const remaining = Math.max(0, order.reservationExpiresAt - clock.now());
    const time = formatRemaining(remaining);
    return html`<div id="countdown" class="countdown" data-remaining-ms="${remaining}" data-expired-url="${expiredUrl(conference, order.orderId)}">
Please complete registration within <strong class="countdown-time">${time}</strong> minutes. After <strong class="countdown-time">${time}</strong> minutes, the reservation we're holding will be released to others.
</div>`;
  }

  // -------------------------------------------------------------------------------------------------------------
  // Conference list and home

  app.get('/', async (_request, reply) => {
    const conferences = await queries.publishedConferences();
    const rows = conferences.map(
      (conference) =>
        html`<li><a href="/${conference.slug}">${conference.name}</a> — ${conference.tagline} (${conference.location}, ${conference.startDate})</li>`,
    );
    return sendPage(
      reply,
      200,
      page({
        site: 'public',
        title: 'List of conferences',
        body: html`<h1>List of conferences</h1>${rows.length === 0 ? html`<p>No conference is open for registration yet.</p>` : html`<ul>${rows}</ul>`}`,
      }),
    );
  });

  const home = async (request: { params: unknown }, reply: FastifyReply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    return conferencePage(
      reply,
      200,
      conference,
      conference.name,
      html`<h1>${conference.name}</h1>
<p>${conference.tagline}</p>
<dl><dt>When</dt><dd>${conference.startDate} – ${conference.endDate}</dd><dt>Where</dt><dd>${conference.location}</dd></dl>
<p>${conference.description}</p>
<nav class="actions">${
        conference.isPublished
          ? html`<a class="button" href="/${conference.slug}/register">Register</a>`
          : html`<span class="notice">${PUBLIC_TEXT.notOpen}</span>`
      } <a href="/${conference.slug}/order/find">Locate Registration</a></nav>`,
    );
  };
  app.get('/:slug', home);
  app.get('/:slug/', home);

  // -------------------------------------------------------------------------------------------------------------
  // Registration: choose seats

  function registerLines(seatTypes: readonly SeatTypeView[], draft: OrderView | undefined): RegisterLine[] {
    return seatTypes.map((seat) => {
      const line = draft?.lines.find((candidate) => candidate.seatTypeId === seat.id);
      const held = draft !== undefined && draft.status !== 'pending' ? (line?.reserved ?? 0) : 0;
      const available = Math.max(seat.available, 0) + held;
      const max = Math.max(Math.min(available, MAX_SEATS_PER_TYPE), 0);
      const partial = draft !== undefined && line !== undefined && line.requested > line.reserved;
      const selected = draft === undefined || line === undefined ? 0 : Math.min(held, max);
      return { seat, available, max, selected, partial };
    });
  }

  function renderRegister(
    reply: FastifyReply,
    status: number,
    conference: Conf,
    form: { orderId: string; orderVersion: number; lines: RegisterLine[]; errors: string[] },
    draft: OrderView | undefined,
  ) {
    const rows = form.lines.map((line) => {
      const field = `q_${line.seat.id}`;
      const choice =
        line.max === 0
          ? html`<span class="sold-out">${PUBLIC_TEXT.soldOut}</span><input type="hidden" name="${field}" value="0">`
          : html`<select name="${field}" id="${field}" aria-label="Quantity of ${line.seat.name}">${Array.from(
              { length: line.max + 1 },
              (_, n) => html`<option value="${n}"${n === line.selected ? html` selected` : ''}>${n}</option>`,
            )}</select>`;
      return html`<tr data-seat-type="${line.seat.name}"><td><strong>${line.seat.name}</strong><br><small>${line.seat.description}</small></td>
<td class="num">${money(line.seat.priceCents)}</td><td class="num">${line.available}</td><td>${choice}</td></tr>
${line.partial ? html`<tr class="partial"><td colspan="4" class="error">${PUBLIC_TEXT.partiallyFulfilled}</td></tr>` : ''}`;
    });
    const body = html`<h1>Register to ${conference.name}</h1>
${form.errors.map((error) => html`<p class="error" role="alert">${error}</p>`)}
${draft === undefined ? '' : countdown(conference, draft)}
<form method="post" action="/${conference.slug}/register">
<input type="hidden" name="orderId" value="${form.orderId}">
<input type="hidden" name="orderVersion" value="${form.orderVersion}">
<table><thead><tr><th>Registration type</th><th class="num">Price</th><th class="num">Available</th><th>Quantity</th></tr></thead>
<tbody>${rows}</tbody></table>
<button type="submit" id="Next">Order now</button>
</form>`;
    return conferencePage(reply, status, conference, `Register to ${conference.name}`, body, {
      countdown: draft !== undefined,
    });
  }

  app.get('/:slug/register', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    if (!conference.isPublished) return message(reply, 404, conference, 'Registration', PUBLIC_TEXT.notOpen);
    const { orderId } = fieldsOf(request.query);
    const seatTypes = await queries.seatTypes(conference.id);
    if (orderId === undefined) {
      const form = {
        orderId: uuidv7(clock.now()),
        orderVersion: 0,
        lines: registerLines(seatTypes, undefined),
      };
      return renderRegister(reply, 200, conference, { ...form, errors: [] }, undefined);
    }
    if (!isId(orderId)) return message(reply, 400, conference, 'Registration', 'The order id is not valid.');
    const draft = await waitForOrder(conference, orderId, (order) => order.status !== 'pending');
    if (draft === undefined) return orderUnknown(reply, conference, registerUrl(conference, orderId));
    if (draft.status === 'confirmed') return completedOrder(reply, conference, draft);
    if (isExpired(draft, clock.now())) return seeOther(reply, expiredUrl(conference, orderId));
    const form = { orderId, orderVersion: draft.version, lines: registerLines(seatTypes, draft), errors: [] };
    return renderRegister(reply, 200, conference, form, draft);
  });

  app.post('/:slug/register', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    if (!conference.isPublished) return message(reply, 404, conference, 'Registration', PUBLIC_TEXT.notOpen);
    const body = fieldsOf(request.body);
    const orderId = body.orderId;
    const orderVersion = wholeNumber(body.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (!isId(orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'Registration', 'The registration form is not valid.');
    const draft = orderVersion > 0 ? await orderOf(conference, orderId) : undefined;
    if (draft !== undefined && isExpired(draft, clock.now()))
      return seeOther(reply, expiredUrl(conference, orderId));
    const lines = registerLines(await queries.seatTypes(conference.id), draft);
    for (const line of lines) line.partial = false;
    const errors: string[] = [];
    let badInput = false;
    let adjusted = false;
    for (const [key, value] of Object.entries(body)) {
      if (!key.startsWith('q_')) continue;
      const line = lines.find((candidate) => candidate.seat.id === key.slice(2));
      const quantity = wholeNumber(value, 0, MAX_SEATS_PER_TYPE);
      if (line === undefined) {
        if (quantity !== 0 && !errors.includes(PUBLIC_TEXT.seatTypeGone))
          errors.push(PUBLIC_TEXT.seatTypeGone);
        adjusted ||= quantity !== 0;
      } else if (quantity === undefined) {
        if (!errors.includes(PUBLIC_TEXT.badQuantity)) errors.push(PUBLIC_TEXT.badQuantity);
        badInput = true;
      } else if (quantity > line.max) {
        line.partial = true;
        line.selected = line.max;
        adjusted = true;
      } else {
        line.selected = quantity;
      }
    }
    const form = { orderId, orderVersion, lines, errors };
    if (badInput) return renderRegister(reply, 400, conference, form, draft);
    if (adjusted) return renderRegister(reply, 200, conference, form, draft);
    if (!lines.some((line) => line.selected > 0)) {
      errors.push(PUBLIC_TEXT.itemsRequired);
      return renderRegister(reply, 400, conference, form, draft);
    }
    try {
      await commands.send('RegisterToConference', {
        orderId,
        conferenceId: conference.id,
        seats: lines.map((line) => ({ seatTypeId: line.seat.id, quantity: line.selected })),
      });
    } catch (error) {
      if (error instanceof ValidationError) {
        errors.push(error.message);
        return renderRegister(reply, 400, conference, form, draft);
      }
      if (error instanceof InvalidOperationError)
        return message(
          reply,
          409,
          conference,
          'Registration',
          `The order can no longer be changed. ${error.message}`,
        );
      throw error;
    }
    return seeOther(reply, registrantUrl(conference, orderId, draft?.version ?? 0));
  });

  // -------------------------------------------------------------------------------------------------------------
  // Checkout: registrant details and payment method

  interface CheckoutForm {
    readonly values: Fields;
    readonly errors: Readonly<Record<string, string>>;
    readonly notice?: string;
  }

  function renderCheckout(
    reply: FastifyReply,
    status: number,
    conference: Conf,
    order: OrderView,
    form: CheckoutForm,
  ) {
    const value = (name: string, fallback = '') => form.values[name] ?? fallback;
    const registrant = order.registrant;
    const lines = order.lines
      .filter((line) => lineQuantity(order, line) > 0)
      .map(
        (line) =>
          html`<tr><td>${seatName(conference, line.seatTypeId)}</td><td class="num">${money(line.unitPriceCents)}</td><td class="num">${lineQuantity(order, line)}</td><td class="num">${money(line.lineTotalCents)}</td></tr>`,
      );
    const input = (name: string, label: string, type: string, fallback = '') =>
      html`<label for="${name}">${label}</label><input type="${type}" id="${name}" name="${name}" value="${value(name, fallback)}">${fieldError(form.errors, name)}`;
    const body = html`<h1>Registrant details</h1>
${form.notice === undefined ? '' : html`<p class="notice" role="alert">${form.notice}</p>`}
${countdown(conference, order)}
<h2>Seats information</h2>
<table><thead><tr><th>Registration type</th><th class="num">Price</th><th class="num">Quantity</th><th class="num">Total</th></tr></thead>
<tbody>${lines}</tbody>
<tfoot><tr><th colspan="3" class="num">Total:</th><th class="num" id="order-total">${money(order.totalCents)}</th></tr></tfoot></table>
<form method="post" action="/${conference.slug}/registrant">
<input type="hidden" name="orderId" value="${order.orderId}">
<input type="hidden" name="orderVersion" value="${order.version}">
<h2>Registrant information</h2>
${input('firstName', 'First Name', 'text', registrant?.firstName)}
${input('lastName', 'Last Name', 'text', registrant?.lastName)}
${input('email', 'Email address', 'email', registrant?.email)}
${input('confirmEmail', 'Confirm e-mail', 'email', registrant?.email)}
${
  order.isFreeOfCharge
    ? ''
    : html`<h2>Billing information</h2>
<label><input type="radio" name="paymentType" value="thirdParty" checked> Credit card</label>
<label><input type="radio" name="paymentType" value="invoice" disabled> Invoice me</label>`
}
<p><a class="button secondary" href="${registerUrl(conference, order.orderId)}">Back</a>
<button type="submit" id="Next" title="Proceed to Third Party">Proceed</button></p>
</form>`;
    return conferencePage(reply, status, conference, 'Registrant details', body, { countdown: true });
  }

  /** The order to check out: priced past `orderVersion`, not confirmed, not expired (else the page is sent). */
  async function checkoutOrder(
    reply: FastifyReply,
    conference: Conf,
    orderId: string,
    orderVersion: number,
  ): Promise<OrderView | undefined> {
    const order = await waitForOrder(conference, orderId, (candidate) => candidate.version > orderVersion);
    if (order === undefined) {
      orderUnknown(reply, conference, registrantUrl(conference, orderId, orderVersion));
      return undefined;
    }
    if (order.reservationExpiresAt === null) {
      completedOrder(reply, conference, order);
      return undefined;
    }
    if (isExpired(order, clock.now())) {
      seeOther(reply, expiredUrl(conference, orderId));
      return undefined;
    }
    return order;
  }

  app.get('/:slug/registrant', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const query = fieldsOf(request.query);
    const orderVersion = wholeNumber(query.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (!isId(query.orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'Registration', 'The order id is not valid.');
    const order = await checkoutOrder(reply, conference, query.orderId, orderVersion);
    if (order === undefined) return reply;
    const notice = query.paymentRejected === undefined ? undefined : PUBLIC_TEXT.paymentRejected;
    return renderCheckout(reply, 200, conference, order, {
      values: {},
      errors: {},
      ...(notice ? { notice } : {}),
    });
  });

  function registrantProblems(values: Fields): Record<string, string> {
    const errors: Record<string, string> = {};
    const blank = (name: string) => (values[name] ?? '').trim() === '';
    if (blank('firstName')) errors.firstName = 'The FirstName field is required.';
    if (blank('lastName')) errors.lastName = 'The LastName field is required.';
    const email = (values.email ?? '').trim();
    if (email === '') errors.email = 'The Email field is required.';
    else if (!EMAIL_PATTERN.test(email)) errors.email = 'The provided email address is not valid.';
    const confirm = (values.confirmEmail ?? '').trim();
    if (confirm === '') errors.confirmEmail = PUBLIC_TEXT.confirmEmail;
    else if (email !== '' && confirm.toLowerCase() !== email.toLowerCase())
      errors.confirmEmail = PUBLIC_TEXT.emailsDiffer;
    return errors;
  }

  app.post('/:slug/registrant', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    const orderVersion = wholeNumber(values.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    const orderId = values.orderId;
    if (!isId(orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'Registration', 'The registrant form is not valid.');
    const errors = registrantProblems(values);
    if (Object.keys(errors).length > 0) {
      const order = await checkoutOrder(reply, conference, orderId, -1);
      return order === undefined ? reply : renderCheckout(reply, 400, conference, order, { values, errors });
    }
    const registrant: PersonalInfo = {
      firstName: (values.firstName ?? '').trim(),
      lastName: (values.lastName ?? '').trim(),
      email: (values.email ?? '').trim(),
    };
    try {
      await commands.send('AssignRegistrantDetails', { orderId, ...registrant });
    } catch (error) {
      if (
        error instanceof NotFoundError ||
        error instanceof InvalidOperationError ||
        error instanceof ValidationError
      ) {
        const order = await checkoutOrder(reply, conference, orderId, -1);
        if (order === undefined) return reply;
        const fieldErrors = error instanceof ValidationError ? error.fields : {};
        return renderCheckout(reply, 400, conference, order, {
          values,
          errors: fieldErrors,
          notice: error.message,
        });
      }
      throw error;
    }
    return startPayment(reply, conference, orderId, orderVersion, values.paymentType ?? 'thirdParty');
  });

  // -------------------------------------------------------------------------------------------------------------
  // Payment

  /** The V3 StartPayment: waits for the reservation, then confirms a free order or starts a third-party payment. */
  async function startPayment(
    reply: FastifyReply,
    conference: Conf,
    orderId: string,
    orderVersion: number,
    paymentType: string,
  ): Promise<FastifyReply> {
    const order = await waitForOrder(
      conference,
      orderId,
      (candidate) => candidate.status !== 'pending' && candidate.version > orderVersion,
    );
    if (order === undefined) {
      return conferencePage(
        reply,
        200,
        conference,
        'Seat reservation',
        html`<h1>${PUBLIC_TEXT.reservationUnknown}</h1>
<p>We are still reserving your seats. Please try again in a few seconds.</p>
<form method="post" action="/${conference.slug}/pay">
<input type="hidden" name="orderId" value="${orderId}"><input type="hidden" name="orderVersion" value="${orderVersion}">
<input type="hidden" name="paymentType" value="${paymentType}">
<button type="submit">Retry</button></form>`,
      );
    }
    if (order.status === 'partiallyReserved' || order.status === 'rejected')
      return seeOther(reply, registerUrl(conference, orderId));
    if (order.status === 'confirmed') return completedOrder(reply, conference, order);
    if (isExpired(order, clock.now())) return seeOther(reply, expiredUrl(conference, orderId));
    if (order.isFreeOfCharge) {
      await commands.send('ConfirmOrder', { orderId });
      return seeOther(reply, confirmationUrl(conference, orderId));
    }
    if (paymentType !== 'thirdParty')
      return message(reply, 400, conference, 'Payment', 'The chosen payment method is not supported.');
    const paymentId = uuidv7(clock.now());
    await commands.send('InitiateThirdPartyProcessorPayment', {
      paymentId,
      paymentSourceId: orderId,
      conferenceId: conference.id,
      description: `Registration for ${conference.name}`,
      totalCents: order.totalCents,
    });
    return seeOther(reply, withQuery(`/${conference.slug}/third-party-payment`, { paymentId }));
  }

  app.post('/:slug/pay', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    const orderVersion = wholeNumber(values.orderVersion ?? '0', 0, Number.MAX_SAFE_INTEGER);
    if (!isId(values.orderId) || orderVersion === undefined)
      return message(reply, 400, conference, 'Payment', 'The payment form is not valid.');
    return startPayment(reply, conference, values.orderId, orderVersion, values.paymentType ?? 'thirdParty');
  });

  async function paymentOf(conference: Conf, query: unknown, wait: boolean) {
    const { paymentId } = fieldsOf(query);
    if (!isId(paymentId)) return undefined;
    const find = async () => {
      const payment = await queries.payment(paymentId);
      return payment?.conferenceId === conference.id ? payment : undefined;
    };
    return wait ? system.waitFor(find, VIEW_WAIT_MS) : find();
  }

  app.get('/:slug/third-party-payment', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    if (!isId(fieldsOf(request.query).paymentId))
      return message(reply, 400, conference, 'Payment', 'The payment id is not valid.');
    const payment = await paymentOf(conference, request.query, true);
    if (payment === undefined) {
      return conferencePage(
        reply,
        200,
        conference,
        'Payment',
        html`<h1>${PUBLIC_TEXT.paymentUnknown}</h1><p>This page refreshes in a few seconds.</p>`,
        { refreshSeconds: 5 },
      );
    }
    if (payment.status === 'completed') return seeOther(reply, confirmationUrl(conference, payment.orderId));
    if (payment.status === 'rejected')
      return seeOther(reply, registrantUrl(conference, payment.orderId, 0, true));
    const callback = (outcome: string) =>
      withQuery(`/${conference.slug}/third-party-payment-${outcome}`, { paymentId: payment.paymentId });
    return seeOther(
      reply,
      withQuery('/payment', {
        itemName: payment.description,
        itemAmount: money(payment.totalCents),
        returnUrl: callback('accept'),
        cancelReturnUrl: callback('reject'),
      }),
    );
  });

  // The processor's return (accept) and cancel (reject) callbacks. A payment already settled the other way wins:
  // a refused accept means it was cancelled, a refused reject that the registrant paid after all.
  const paymentCallbacks = {
    accept: { command: 'CompleteThirdPartyProcessorPayment', paid: true },
    reject: { command: 'CancelThirdPartyProcessorPayment', paid: false },
  } as const;
  for (const [outcome, { command, paid }] of Object.entries(paymentCallbacks)) {
    app.get(`/:slug/third-party-payment-${outcome}`, async (request, reply) => {
      const conference = await conferenceOf(request.params, reply);
      if (conference === undefined) return reply;
      const payment = await paymentOf(conference, request.query, false);
      if (payment === undefined)
        return message(reply, 404, conference, 'Payment', 'The payment could not be found.');
      const settled = (asPaid: boolean) =>
        seeOther(
          reply,
          asPaid
            ? confirmationUrl(conference, payment.orderId)
            : registrantUrl(conference, payment.orderId, 0, true),
        );
      try {
        await commands.send(command, { paymentId: payment.paymentId });
      } catch (error) {
        if (error instanceof InvalidOperationError) return settled(!paid);
        throw error;
      }
      return settled(paid);
    });
  }

  // The simulated third-party payment processor (the Journey's Payments area).
  app.get('/payment', async (request, reply) => {
    const query = fieldsOf(request.query);
    const { returnUrl, cancelReturnUrl } = query;
    if (!isLocalPath(returnUrl) || !isLocalPath(cancelReturnUrl))
      return message(reply, 400, undefined, 'Payment', 'The payment request is not valid.');
    const body = html`<h1>Simulated Third-party Payment Clearing Processor</h1>
<dl><dt>Item:</dt><dd id="item-name">${query.itemName ?? ''}</dd><dt>Amount:</dt><dd id="item-amount">${query.itemAmount ?? ''}</dd></dl>
<form method="post" action="/payment">
<input type="hidden" name="returnUrl" value="${returnUrl}">
<input type="hidden" name="cancelReturnUrl" value="${cancelReturnUrl}">
<button type="submit" name="outcome" value="accepted">Accept</button>
<button type="submit" name="outcome" value="rejected" class="danger">Reject</button>
</form>`;
    return sendPage(reply, 200, page({ site: 'public', title: 'Payment', body }));
  });

  app.post('/payment', async (request, reply) => {
    const { returnUrl, cancelReturnUrl, outcome } = fieldsOf(request.body);
    if (!isLocalPath(returnUrl) || !isLocalPath(cancelReturnUrl))
      return message(reply, 400, undefined, 'Payment', 'The payment request is not valid.');
    return seeOther(reply, outcome === 'accepted' ? returnUrl : cancelReturnUrl);
  });

  // -------------------------------------------------------------------------------------------------------------
  // After the order: thank you, expired, find, display, assign seats

  app.get('/:slug/confirmation', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const { orderId } = fieldsOf(request.query);
    if (!isId(orderId)) return message(reply, 400, conference, 'Registration', 'The order id is not valid.');
    // The payment confirms the order through the process manager: give it the usual moment.
    const order =
      (await waitForOrder(conference, orderId, (candidate) => candidate.status === 'confirmed')) ??
      (await orderOf(conference, orderId));
    if (order === undefined)
      return message(reply, 404, conference, 'Registration', 'The order could not be found.');
    const body = html`<h1>Thank you</h1>
<p class="notice success"><strong>Registration success</strong><br>You have successfully submitted your registration!</p>
${order.status === 'confirmed' ? '' : html`<p class="notice">Your order is being confirmed.</p>`}
<p>Your order access code is <span class="access-code" id="access-code">${order.accessCode}</span>. Use it with your e-mail address to find your registration later.</p>
<nav class="actions"><a href="/${conference.slug}/order/${order.orderId}">Go to my registration</a>
<a class="button" href="/${conference.slug}/order/${order.orderId}/seats">Proceed to Seat Assignment</a></nav>`;
    return conferencePage(reply, 200, conference, 'Thank you', body);
  });

  app.get('/:slug/expired', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    return conferencePage(
      reply,
      200,
      conference,
      'Order expired',
      html`<h1>${PUBLIC_TEXT.expired}</h1><p>${PUBLIC_TEXT.released}</p>
<p><a class="button" href="/${conference.slug}/register">Start a new registration</a></p>`,
    );
  });

  function renderFind(reply: FastifyReply, status: number, conference: Conf, values: Fields, error?: string) {
    const body = html`<h1>Locate registration</h1>
${error === undefined ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="/${conference.slug}/order/find">
<label for="email">Email address</label><input type="email" id="email" name="email" value="${values.email ?? ''}">
<label for="accessCode">Order #</label><input type="text" id="accessCode" name="accessCode" value="${values.accessCode ?? ''}">
<p><button type="submit" id="find" name="find">Find</button></p>
</form>`;
    return conferencePage(reply, status, conference, 'Locate registration', body);
  }

  app.get('/:slug/order/find', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    return renderFind(reply, 200, conference, {});
  });

  app.post('/:slug/order/find', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    const email = (values.email ?? '').trim();
    const code = (values.accessCode ?? '').trim();
    if (email === '' || code === '')
      return renderFind(reply, 400, conference, values, 'Enter the e-mail address and the order code.');
    const order = await queries.findOrder(email, code);
    if (order === undefined || order.conferenceId !== conference.id)
      return renderFind(reply, 200, conference, values, PUBLIC_TEXT.orderNotFound);
    return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
  });

  function attendeeText(attendee: PersonalInfo | null): string {
    return attendee === null
      ? 'Not assigned'
      : `${attendee.firstName} ${attendee.lastName} <${attendee.email}>`;
  }

  app.get('/:slug/order/:orderId', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const { orderId } = fieldsOf(request.params);
    const order = isId(orderId) ? await orderOf(conference, orderId) : undefined;
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    const assignments = await settledAssignments(system, order, ['confirmed'], VIEW_WAIT_MS);
    const lines = order.lines
      .filter((line) => lineQuantity(order, line) > 0)
      .map(
        (line) =>
          html`<tr><td>${seatName(conference, line.seatTypeId)}</td><td class="num">${money(line.unitPriceCents)}</td><td class="num">${lineQuantity(order, line)}</td><td class="num">${money(line.lineTotalCents)}</td></tr>`,
      );
    const seats =
      assignments === undefined
        ? html`<p>Seats can be assigned to attendees once the order is confirmed.</p>`
        : html`<h2>Attendees</h2><table id="attendees"><thead><tr><th>Seat type</th><th>Attendee</th></tr></thead><tbody>${assignments.seats.map(
            (seat) =>
              html`<tr><td>${seatName(conference, seat.seatTypeId)}</td><td>${attendeeText(seat.attendee)}</td></tr>`,
          )}</tbody></table>
<p><a class="button" href="/${conference.slug}/order/${order.orderId}/seats">Assign seats to attendees</a></p>`;
    const body = html`<h1>Registration details</h1>
<dl><dt>Order code</dt><dd><span class="access-code">${order.accessCode}</span></dd><dt>Status</dt><dd id="order-status">${order.status}</dd>
${order.registrant === null ? '' : html`<dt>Registrant</dt><dd>${attendeeText(order.registrant)}</dd>`}</dl>
<table><thead><tr><th>Registration type</th><th class="num">Price</th><th class="num">Quantity</th><th class="num">Total</th></tr></thead>
<tbody>${lines}</tbody><tfoot><tr><th colspan="3" class="num">Total:</th><th class="num">${money(order.totalCents)}</th></tr></tfoot></table>
${seats}`;
    return conferencePage(reply, 200, conference, 'Registration details', body);
  });

  function renderSeats(
    reply: FastifyReply,
    status: number,
    conference: Conf,
    assignments: AssignmentsView,
    values: Fields | undefined,
    errors: Readonly<Record<string, string>>,
  ) {
    const rows = assignments.seats.map((seat) => {
      const n = seat.position;
      const value = (field: 'firstName' | 'lastName' | 'email') =>
        values === undefined ? (seat.attendee?.[field] ?? '') : (values[`${field}_${n}`] ?? '');
      const cell = (field: 'firstName' | 'lastName' | 'email', label: string) =>
        html`<td><input type="${field === 'email' ? 'email' : 'text'}" name="${field}_${n}" aria-label="${label} of seat ${n + 1}" value="${value(field)}"></td>`;
      return html`<tr><td>${seatName(conference, seat.seatTypeId)}</td>${cell('firstName', 'First name')}${cell('lastName', 'Last name')}${cell('email', 'Email')}</tr>
${errors[String(n)] === undefined ? '' : html`<tr><td colspan="4" class="error" role="alert">${errors[String(n)]}</td></tr>`}`;
    });
    const body = html`<h1>Assign Seats</h1>
<form method="post" action="/${conference.slug}/order/${assignments.orderId}/seats">
<table><thead><tr><th>Seat type</th><th>First name</th><th>Last name</th><th>Email</th></tr></thead><tbody>${rows}</tbody></table>
<p>Attendees will be notified by e-mail</p>
<p><a class="button secondary" href="/${conference.slug}/order/${assignments.orderId}">Cancel</a>
<button type="submit" id="Next">Save</button></p>
</form>`;
    return conferencePage(reply, status, conference, 'Assign Seats', body);
  }

  async function assignmentsOf(conference: Conf, params: unknown, settling: readonly OrderView['status'][]) {
    const { orderId } = fieldsOf(params);
    const order = isId(orderId) ? await orderOf(conference, orderId) : undefined;
    if (order === undefined) return { order: undefined, assignments: undefined };
    return { order, assignments: await settledAssignments(system, order, settling, VIEW_WAIT_MS) };
  }

  app.get('/:slug/order/:orderId/seats', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const { order, assignments } = await assignmentsOf(conference, request.params, ['confirmed', 'reserved']);
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    if (assignments === undefined) return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
    return renderSeats(reply, 200, conference, assignments, undefined, {});
  });

  app.post('/:slug/order/:orderId/seats', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const { order, assignments } = await assignmentsOf(conference, request.params, ['confirmed']);
    if (order === undefined) return seeOther(reply, `/${conference.slug}/order/find`);
    if (assignments === undefined) return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
    const values = fieldsOf(request.body);
    const errors: Record<string, string> = {};
    const changes: ({ position: number; attendee: PersonalInfo } | { position: number; attendee: null })[] =
      [];
    for (const seat of assignments.seats) {
      const n = seat.position;
      const posted = (field: string) => values[`${field}_${n}`];
      const email = posted('email')?.trim();
      if (email === undefined) continue;
      const before = seat.attendee;
      if (email === '') {
        if (before !== null) changes.push({ position: n, attendee: null });
        continue;
      }
      const attendee = {
        firstName: (posted('firstName') ?? '').trim(),
        lastName: (posted('lastName') ?? '').trim(),
        email,
      };
      const problems: string[] = [];
      if (attendee.firstName === '') problems.push('The first name is required.');
      if (attendee.lastName === '') problems.push('The last name is required.');
      if (!EMAIL_PATTERN.test(email)) problems.push('The provided email address is not valid.');
      if (problems.length > 0) {
        errors[String(n)] = problems.join(' ');
        continue;
      }
      const same =
        before !== null &&
        before.firstName === attendee.firstName &&
        before.lastName === attendee.lastName &&
        before.email.toLowerCase() === attendee.email.toLowerCase();
      if (!same) changes.push({ position: n, attendee });
    }
    if (Object.keys(errors).length > 0)
      return renderSeats(reply, 400, conference, assignments, values, errors);
    try {
      for (const change of changes) {
        if (change.attendee === null)
          await commands.send('UnassignSeat', { assignmentsId: order.orderId, position: change.position });
        else
          await commands.send('AssignSeat', {
            assignmentsId: order.orderId,
            position: change.position,
            attendee: change.attendee,
          });
      }
    } catch (error) {
      if (error instanceof ValidationError || error instanceof NotFoundError) {
        const message =
          error instanceof ValidationError ? Object.values(error.fields).join(' ') : error.message;
        return renderSeats(reply, 400, conference, assignments, values, {
          [String(changes[0]?.position ?? 0)]: message,
        });
      }
      throw error;
    }
    // Show the registrant what was saved: wait (bounded) for the view to have every change.
    await system.waitFor(async () => {
      const view = await queries.assignments(order.orderId);
      const applied = changes.every((change) => {
        const seat = view?.seats.find((candidate) => candidate.position === change.position);
        return change.attendee === null
          ? seat?.attendee === null
          : seat?.attendee?.email.toLowerCase() === change.attendee.email.toLowerCase();
      });
      return applied ? true : undefined;
    }, VIEW_WAIT_MS);
    return seeOther(reply, `/${conference.slug}/order/${order.orderId}`);
  });
}
