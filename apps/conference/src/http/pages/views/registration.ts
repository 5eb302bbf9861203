/** The registration form: how many seats of each type (0 up to what is available, "Sold out" at none). */
import type { ConferenceView, SeatTypeView } from '../../../read-models/conference-view.js';
import { html, type SafeHtml } from '../html.js';
import { money } from '../layout.js';
import { conferencePage, countdown, type Hold } from './public-page.js';
import { PUBLIC_TEXT } from './public-text.js';

/** One row of the registration form. */
export interface RegisterLine {
  readonly seat: SeatTypeView;
  /** Free seats plus those this order already holds. */
  readonly available: number;
  readonly max: number;
  selected: number;
  partial: boolean;
}

export interface RegisterForm {
  readonly orderId: string;
  /** A new order's token (the server made its id); an existing order's is in the browser's cookie. */
  readonly orderToken?: string | undefined;
  readonly orderVersion: number;
  readonly lines: readonly RegisterLine[];
  readonly errors: readonly string[];
}

/** The form; `hold` when the order already holds seats (re-choosing them), with its countdown. */
export function registerPage(
  conference: ConferenceView,
  form: RegisterForm,
  hold: Hold | undefined,
): SafeHtml {
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
${hold === undefined ? '' : countdown(conference, hold)}
<form method="post" action="/${conference.slug}/register">
<input type="hidden" name="orderId" value="${form.orderId}">
${form.orderToken === undefined ? '' : html`<input type="hidden" name="orderToken" value="${form.orderToken}">`}
<input type="hidden" name="orderVersion" value="${form.orderVersion}">
<table><thead><tr><th>Registration type</th><th class="num">Price</th><th class="num">Available</th><th>Quantity</th></tr></thead>
<tbody>${rows}</tbody></table>
<button type="submit" id="Next">Order now</button>
</form>`;
  return conferencePage(conference, `Register to ${conference.name}`, body, {
    countdown: hold !== undefined,
  });
}
