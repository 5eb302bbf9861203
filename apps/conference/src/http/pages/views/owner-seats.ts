/** The owner's seat type pages: the list with the form to add one, and the form to edit one. */
import type { Conference, ConferenceSeatType } from '../../../domain/conference.js';
import { html, type SafeHtml } from '../html.js';
import { money } from '../layout.js';
import type { Fields } from '../support.js';
import { input, manageUrl, ownerPage } from './owner-page.js';

export interface SeatForm {
  readonly values: Fields;
  readonly errors: Readonly<Record<string, string>>;
  /** A message about the list (a seat type that cannot be deleted). */
  readonly error?: string;
}

function seatInputs(values: Fields, errors: Readonly<Record<string, string>>): SafeHtml {
  const value = (name: string) => values[name] ?? '';
  return html`${input('name', 'Seat type', 'text', value('name'), errors)}
${input('description', 'Description', 'text', value('description'), errors)}
${input('quantity', 'Quota', 'number', value('quantity'), errors)}
${input('price', 'Price', 'text', value('price'), errors)}`;
}

export function seatTypesPage(conference: Conference, form: SeatForm): SafeHtml {
  const base = manageUrl(conference);
  const rows = conference.seatTypes.map(
    (
      seat,
    ) => html`<tr><td><a href="${base}/seats/${seat.seatTypeId}">${seat.name}</a></td><td>${seat.description}</td><td class="num">${seat.quantity}</td><td class="num">${money(seat.priceCents)}</td>
<td>${
      conference.wasEverPublished
        ? html`<button type="button" disabled title="Seat types cannot be deleted once the conference was published">Delete</button>`
        : html`<form method="post" action="${base}/seats/${seat.seatTypeId}/delete"><button type="submit" class="danger">Delete</button></form>`
    }</td></tr>`,
  );
  return ownerPage(
    'Seat types',
    html`<h1>Seat types</h1>
<p><a href="${base}">Back to the conference</a></p>
${form.error === undefined ? '' : html`<p class="error" role="alert">${form.error}</p>`}
<table id="seat-types"><thead><tr><th>Seat type</th><th>Description</th><th class="num">Quota</th><th class="num">Price</th><th></th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="5">No seat types yet.</td></tr>` : rows}</tbody></table>
<h2>Add new seat type</h2>
<form method="post" action="${base}/seats">
${seatInputs(form.values, form.errors)}
<p><button type="submit" id="create-seat">Create</button></p>
</form>`,
  );
}

export function editSeatPage(
  conference: Conference,
  seat: ConferenceSeatType,
  values: Fields,
  errors: Readonly<Record<string, string>>,
): SafeHtml {
  const base = manageUrl(conference);
  return ownerPage(
    'Edit seat type',
    html`<h1>Edit seat type</h1>
<form method="post" action="${base}/seats/${seat.seatTypeId}">
${seatInputs(values, errors)}
<p><a class="button secondary" href="${base}/seats">Cancel</a><button type="submit">Save</button></p>
</form>`,
  );
}
