/** Checkout: the order's seats and total, the countdown, the registrant's details and the payment method. */
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { OrderView } from '../../../read-models/order-view.js';
import { html, type SafeHtml } from '../html.js';
import { fieldError, money } from '../layout.js';
import type { Fields } from '../support.js';
import { conferencePage, countdown, type Hold, orderLineRows } from './public-page.js';
import { registerUrl } from './public-urls.js';

export interface CheckoutForm {
  readonly values: Fields;
  readonly errors: Readonly<Record<string, string>>;
  readonly notice?: string;
}

export function checkoutPage(
  conference: ConferenceView,
  order: OrderView,
  hold: Hold,
  form: CheckoutForm,
): SafeHtml {
  const value = (name: string, fallback = '') => form.values[name] ?? fallback;
  const registrant = order.registrant;
  const input = (name: string, label: string, type: string, fallback = '') =>
    html`<label for="${name}">${label}</label><input type="${type}" id="${name}" name="${name}" value="${value(name, fallback)}">${fieldError(form.errors, name)}`;
  const body = html`<h1>Registrant details</h1>
${form.notice === undefined ? '' : html`<p class="notice" role="alert">${form.notice}</p>`}
${countdown(conference, hold)}
<h2>Seats information</h2>
<table><thead><tr><th>Registration type</th><th class="num">Price</th><th class="num">Quantity</th><th class="num">Total</th></tr></thead>
<tbody>${orderLineRows(conference, order)}</tbody>
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
  return conferencePage(conference, 'Registrant details', body, { countdown: true });
}
