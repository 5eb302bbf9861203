/**
 * The owner's site (the Journey's Conference.Web.Admin): create a conference, log in with e-mail and access code,
 * then under `/manage/{slug}/{accessCode}` see and edit the conference, publish or unpublish it, configure its seat
 * types and see its orders. The access code in the URL must be the conference's, exactly (else 401).
 *
 * Reads that must reflect the owner's own last change (details, seat types, publishing) come from the write side
 * (`management.get`); only finding a conference by slug or login and the orders list use the read models.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import type { Conference, ConferenceSeatType } from '../../domain/conference.js';
import type { ConferenceDetails } from '../../domain/contracts.js';
import { ConflictError, InvalidOperationError, NotFoundError, ValidationError } from '../../domain/errors.js';
import { toCents } from '../../domain/pricing.js';
import { type HtmlValue, html } from './html.js';
import { fieldError, money, page } from './layout.js';
import { type Fields, fieldsOf, isId, seeOther, sendPage, VIEW_WAIT_MS } from './support.js';

export interface OwnerSiteOptions {
  readonly system: ConferenceSystem;
}

export const OWNER_TEXT = {
  title: 'Contoso Conference Management Portal',
  invalidAccessCode: 'Invalid access code.',
  notFound: 'The conference could not be found.',
  locateFailed: 'Could not locate a conference with the provided email and access code.',
  slugTaken: 'The chosen conference slug is already taken.',
  cannotDelete: "Can't delete seats from a conference that has been published at least once.",
} as const;

/** The form fields of a conference and the domain's names for their errors. */
const DETAIL_FIELDS: readonly { name: keyof ConferenceDetails; label: string; type: string }[] = [
  { name: 'name', label: 'Title', type: 'text' },
  { name: 'tagline', label: 'Tagline', type: 'text' },
  { name: 'location', label: 'Location', type: 'text' },
  { name: 'twitterSearch', label: 'Twitter search', type: 'text' },
  { name: 'description', label: 'Description', type: 'textarea' },
  { name: 'startDate', label: 'Start date', type: 'date' },
  { name: 'endDate', label: 'End date', type: 'date' },
];

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

function input(
  name: string,
  label: string,
  type: string,
  value: string,
  errors: Readonly<Record<string, string>>,
) {
  const control =
    type === 'textarea'
      ? html`<textarea id="${name}" name="${name}">${value}</textarea>`
      : html`<input type="${type}" id="${name}" name="${name}" value="${value}">`;
  return html`<label for="${name}">${label}</label>${control}${fieldError(errors, name)}`;
}

/** A seat type's fields from a form: quota and price as the owner wrote them, checked by the domain. */
function seatFieldsFrom(values: Fields) {
  const quantityText = (values.quantity ?? '').trim();
  const priceText = (values.price ?? '').trim();
  let priceCents = Number.NaN;
  if (/^\d+(\.\d{1,2})?$/.test(priceText)) {
    try {
      priceCents = toCents(Number(priceText));
    } catch {
      priceCents = Number.NaN;
    }
  }
  return {
    name: (values.name ?? '').trim(),
    description: (values.description ?? '').trim(),
    quantity: /^\d{1,9}$/.test(quantityText) ? Number(quantityText) : Number.NaN,
    priceCents,
  };
}

export async function ownerSite(app: FastifyInstance, { system }: OwnerSiteOptions): Promise<void> {
  const { management, queries } = system;

  const ownerPage = (reply: FastifyReply, status: number, title: string, body: HtmlValue) =>
    sendPage(reply, status, page({ site: 'owner', title, body }));
  const message = (reply: FastifyReply, status: number, title: string, text: string) =>
    ownerPage(reply, status, title, html`<h1>${title}</h1><p class="error" role="alert">${text}</p>`);
  const base = (conference: Conference) => `/manage/${conference.slug}/${conference.accessCode}`;

  /**
   * The conference of the `slug` and `accessCode` route parameters, from the write side, or the 404/401 page sent.
   * The slug is looked up in the conference view, waited for briefly: a conference just created reaches it a
   * moment later.
   */
  async function conferenceOf(params: unknown, reply: FastifyReply): Promise<Conference | undefined> {
    const { slug, accessCode } = fieldsOf(params);
    const view =
      slug === undefined || !/^\w+$/.test(slug)
        ? undefined
        : await system.waitFor(() => queries.conferenceBySlug(slug), VIEW_WAIT_MS);
    if (view === undefined) {
      message(reply, 404, 'Not found', OWNER_TEXT.notFound);
      return undefined;
    }
    if (view.accessCode !== accessCode) {
      message(reply, 401, 'Unauthorized', OWNER_TEXT.invalidAccessCode);
      return undefined;
    }
    return management.get(view.id);
  }

  app.get('/manage', async (_request, reply) =>
    ownerPage(
      reply,
      200,
      OWNER_TEXT.title,
      html`<h1>${OWNER_TEXT.title}</h1>
<nav class="actions"><a class="button" href="/manage/locate">Log in</a><a class="button" href="/manage/create">Create Conference</a></nav>`,
    ),
  );

  // -------------------------------------------------------------------------------------------------------------
  // Log in

  function renderLocate(reply: FastifyReply, status: number, email: string, error?: string) {
    return ownerPage(
      reply,
      status,
      'Log in',
      html`<h1>Locate your conference</h1>
${error === undefined ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="/manage/locate">
<label for="email">Email address</label><input type="email" id="email" name="email" value="${email}">
<label for="accessCode">Access code</label><input type="text" id="accessCode" name="accessCode" value="">
<p><button type="submit">Login</button></p></form>`,
    );
  }

  app.get('/manage/locate', async (_request, reply) => renderLocate(reply, 200, ''));

  app.post('/manage/locate', async (request, reply) => {
    const values = fieldsOf(request.body);
    const email = (values.email ?? '').trim();
    const accessCode = (values.accessCode ?? '').trim();
    const conferenceId =
      email === '' || accessCode === '' ? undefined : await queries.ownerLogin(email, accessCode);
    if (conferenceId === undefined) return renderLocate(reply, 200, email, OWNER_TEXT.locateFailed);
    return seeOther(reply, base(await management.get(conferenceId)));
  });

  // -------------------------------------------------------------------------------------------------------------
  // Create and edit

  function renderCreate(
    reply: FastifyReply,
    status: number,
    values: Fields,
    errors: Readonly<Record<string, string>>,
  ) {
    const value = (name: string) => values[name] ?? '';
    return ownerPage(
      reply,
      status,
      'Create Conference',
      html`<h1>Create Conference</h1>
<form method="post" action="/manage/create">
<h2>Owner</h2>
${input('ownerName', 'Name', 'text', value('ownerName'), errors)}
${input('ownerEmail', 'Email address', 'email', value('ownerEmail'), errors)}
<h2>Conference</h2>
${input('slug', 'Slug/conference code', 'text', value('slug'), errors)}
${DETAIL_FIELDS.map((field) => input(field.name, field.label, field.type, value(field.name), errors))}
<p><button type="submit" id="save">Save conference</button></p>
</form>`,
    );
  }

  app.get('/manage/create', async (_request, reply) => renderCreate(reply, 200, {}, {}));

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
      if (error instanceof ValidationError) return renderCreate(reply, 400, values, error.fields);
      if (error instanceof ConflictError)
        return renderCreate(reply, 409, values, { slug: OWNER_TEXT.slugTaken });
      throw error;
    }
  });

  app.get('/manage/:slug/:accessCode', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const { details, owner } = conference;
    const row = (label: string, value: HtmlValue) => html`<dt>${label}</dt><dd>${value}</dd>`;
    return ownerPage(
      reply,
      200,
      'Conference details',
      html`<h1>Conference details</h1>
<dl>
${row('Owner', owner.name)}${row('Email address', owner.email)}
${row('Access Code', html`<span class="access-code" id="access-code">${conference.accessCode}</span>`)}
${row('Title', details.name)}${row('Tagline', details.tagline)}${row('Slug', conference.slug)}
${row('Location', details.location)}${row('Twitter search', details.twitterSearch)}${row('Description', details.description)}
${row('Dates', `${details.startDate} – ${details.endDate}`)}
${row('Status', html`<span id="publish-status">${conference.isPublished ? 'Published' : 'Not published'}</span>`)}
</dl>
<nav class="actions"><a href="${base(conference)}/edit">Edit</a><a href="${base(conference)}/seats">Configure seats</a><a href="${base(conference)}/orders">Orders</a>
${conference.isPublished ? html`<a href="/${conference.slug}">Public page</a>` : ''}</nav>
<form method="post" action="${base(conference)}/${conference.isPublished ? 'unpublish' : 'publish'}">
<button type="submit" id="publish">${conference.isPublished ? 'Unpublish' : 'Publish'}</button></form>`,
    );
  });

  function renderEdit(
    reply: FastifyReply,
    status: number,
    conference: Conference,
    values: Fields,
    errors: Readonly<Record<string, string>>,
  ) {
    return ownerPage(
      reply,
      status,
      'Edit conference',
      html`<h1>Edit conference</h1>
<dl><dt>Owner</dt><dd>${conference.owner.name} (${conference.owner.email})</dd><dt>Access Code</dt><dd>${conference.accessCode}</dd><dt>Slug</dt><dd>${conference.slug}</dd></dl>
<form method="post" action="${base(conference)}/edit">
${DETAIL_FIELDS.map((field) => input(field.name, field.label, field.type, values[field.name] ?? '', errors))}
<p><a class="button secondary" href="${base(conference)}">Cancel</a><button type="submit">Save</button></p>
</form>`,
    );
  }

  app.get('/manage/:slug/:accessCode/edit', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    return renderEdit(reply, 200, conference, { ...conference.details }, {});
  });

  app.post('/manage/:slug/:accessCode/edit', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    try {
      await management.update(conference.conferenceId, detailsFrom(values));
    } catch (error) {
      if (error instanceof ValidationError) return renderEdit(reply, 400, conference, values, error.fields);
      throw error;
    }
    return seeOther(reply, base(conference));
  });

  for (const action of ['publish', 'unpublish'] as const) {
    app.post(`/manage/:slug/:accessCode/${action}`, async (request, reply) => {
      const conference = await conferenceOf(request.params, reply);
      if (conference === undefined) return reply;
      if (action === 'publish') await management.publish(conference.conferenceId);
      else await management.unpublish(conference.conferenceId);
      return seeOther(reply, base(conference));
    });
  }

  // -------------------------------------------------------------------------------------------------------------
  // Seat types

  function seatInputs(values: Fields, errors: Readonly<Record<string, string>>) {
    const value = (name: string) => values[name] ?? '';
    return html`${input('name', 'Seat type', 'text', value('name'), errors)}
${input('description', 'Description', 'text', value('description'), errors)}
${input('quantity', 'Quota', 'number', value('quantity'), errors)}
${input('price', 'Price', 'text', value('price'), errors)}`;
  }

  function renderSeats(
    reply: FastifyReply,
    status: number,
    conference: Conference,
    form: { values: Fields; errors: Readonly<Record<string, string>>; error?: string },
  ) {
    const rows = conference.seatTypes.map(
      (
        seat,
      ) => html`<tr><td><a href="${base(conference)}/seats/${seat.seatTypeId}">${seat.name}</a></td><td>${seat.description}</td><td class="num">${seat.quantity}</td><td class="num">${money(seat.priceCents)}</td>
<td>${
        conference.wasEverPublished
          ? html`<button type="button" disabled title="Seat types cannot be deleted once the conference was published">Delete</button>`
          : html`<form method="post" action="${base(conference)}/seats/${seat.seatTypeId}/delete"><button type="submit" class="danger">Delete</button></form>`
      }</td></tr>`,
    );
    return ownerPage(
      reply,
      status,
      'Seat types',
      html`<h1>Seat types</h1>
<p><a href="${base(conference)}">Back to the conference</a></p>
${form.error === undefined ? '' : html`<p class="error" role="alert">${form.error}</p>`}
<table id="seat-types"><thead><tr><th>Seat type</th><th>Description</th><th class="num">Quota</th><th class="num">Price</th><th></th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="5">No seat types yet.</td></tr>` : rows}</tbody></table>
<h2>Add new seat type</h2>
<form method="post" action="${base(conference)}/seats">
${seatInputs(form.values, form.errors)}
<p><button type="submit" id="create-seat">Create</button></p>
</form>`,
    );
  }

  app.get('/manage/:slug/:accessCode/seats', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    return renderSeats(reply, 200, conference, { values: {}, errors: {} });
  });

  app.post('/manage/:slug/:accessCode/seats', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const values = fieldsOf(request.body);
    try {
      await management.createSeat(conference.conferenceId, seatFieldsFrom(values));
    } catch (error) {
      if (error instanceof ValidationError)
        return renderSeats(reply, 400, conference, { values, errors: error.fields });
      throw error;
    }
    return seeOther(reply, `${base(conference)}/seats`);
  });

  function seatOf(conference: Conference, params: unknown): ConferenceSeatType | undefined {
    const { seatTypeId } = fieldsOf(params);
    return isId(seatTypeId) ? conference.seatTypes.find((seat) => seat.seatTypeId === seatTypeId) : undefined;
  }

  function renderSeatEdit(
    reply: FastifyReply,
    status: number,
    conference: Conference,
    seat: ConferenceSeatType,
    values: Fields,
    errors: Readonly<Record<string, string>>,
  ) {
    return ownerPage(
      reply,
      status,
      'Edit seat type',
      html`<h1>Edit seat type</h1>
<form method="post" action="${base(conference)}/seats/${seat.seatTypeId}">
${seatInputs(values, errors)}
<p><a class="button secondary" href="${base(conference)}/seats">Cancel</a><button type="submit">Save</button></p>
</form>`,
    );
  }

  app.get('/manage/:slug/:accessCode/seats/:seatTypeId', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return message(reply, 404, 'Not found', 'The seat type could not be found.');
    const values = {
      name: seat.name,
      description: seat.description,
      quantity: String(seat.quantity),
      price: money(seat.priceCents),
    };
    return renderSeatEdit(reply, 200, conference, seat, values, {});
  });

  app.post('/manage/:slug/:accessCode/seats/:seatTypeId', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return message(reply, 404, 'Not found', 'The seat type could not be found.');
    const values = fieldsOf(request.body);
    try {
      await management.updateSeat(conference.conferenceId, seat.seatTypeId, seatFieldsFrom(values));
    } catch (error) {
      if (error instanceof ValidationError)
        return renderSeatEdit(reply, 400, conference, seat, values, error.fields);
      throw error;
    }
    return seeOther(reply, `${base(conference)}/seats`);
  });

  app.post('/manage/:slug/:accessCode/seats/:seatTypeId/delete', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const seat = seatOf(conference, request.params);
    if (seat === undefined) return message(reply, 404, 'Not found', 'The seat type could not be found.');
    try {
      await management.deleteSeat(conference.conferenceId, seat.seatTypeId);
    } catch (error) {
      if (error instanceof InvalidOperationError || error instanceof NotFoundError)
        return renderSeats(reply, 409, conference, { values: {}, errors: {}, error: error.message });
      throw error;
    }
    return seeOther(reply, `${base(conference)}/seats`);
  });

  // -------------------------------------------------------------------------------------------------------------
  // Orders

  app.get('/manage/:slug/:accessCode/orders', async (request, reply) => {
    const conference = await conferenceOf(request.params, reply);
    if (conference === undefined) return reply;
    const orders = await queries.ordersOfConference(conference.conferenceId);
    const seatName = (id: string) =>
      conference.seatTypes.find((seat) => seat.seatTypeId === id)?.name ?? 'Seat';
    const rows = await Promise.all(
      orders.map(async (order) => {
        const assignments = await queries.assignments(order.orderId);
        const attendees = (assignments?.seats ?? [])
          .filter((seat) => seat.attendee !== null)
          .map(
            (seat) =>
              html`<li>${seatName(seat.seatTypeId)}: ${seat.attendee?.lastName} ${seat.attendee?.firstName}, ${seat.attendee?.email}</li>`,
          );
        const registrant = order.registrant;
        return html`<tr><td>${order.accessCode}</td><td>${order.status === 'paid' ? 'Paid' : 'Pending'}</td><td class="num">${money(order.totalCents)}</td>
<td>${registrant === null ? '' : `${registrant.lastName}, ${registrant.firstName}`}</td><td>${registrant?.email ?? ''}</td><td><ul>${attendees}</ul></td></tr>`;
      }),
    );
    return ownerPage(
      reply,
      200,
      'Orders & Attendees',
      html`<h1>Orders &amp; Attendees</h1>
<p><a href="${base(conference)}">Back to the conference</a></p>
<table id="orders"><thead><tr><th>Order Code</th><th>Status</th><th class="num">Total Amount ($)</th><th>Registrant Name</th><th>Registrant Email</th><th>Attendees</th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="6">No orders yet.</td></tr>` : rows}</tbody></table>`,
    );
  });
}
