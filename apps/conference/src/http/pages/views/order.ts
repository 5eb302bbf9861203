/** After the order: the thank-you page, finding an order by e-mail and code, and the order's details. */
import type { PersonalInfo } from '../../../domain/contracts.js';
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { AssignmentsView, OrderView } from '../../../read-models/order-view.js';
import { html, type SafeHtml } from '../html.js';
import { money } from '../layout.js';
import type { Fields } from '../support.js';
import { conferencePage, orderLineRows, seatName } from './public-page.js';

export function confirmationPage(conference: ConferenceView, order: OrderView): SafeHtml {
  const body = html`<h1>Thank you</h1>
<p class="notice success"><strong>Registration success</strong><br>You have successfully submitted your registration!</p>
${order.status === 'confirmed' ? '' : html`<p class="notice">Your order is being confirmed.</p>`}
<p>Your order access code is <span class="access-code" id="access-code">${order.accessCode}</span>. Use it with your e-mail address to find your registration later.</p>
<nav class="actions"><a href="/${conference.slug}/order/${order.orderId}">Go to my registration</a>
<a class="button" href="/${conference.slug}/order/${order.orderId}/seats">Proceed to Seat Assignment</a></nav>`;
  return conferencePage(conference, 'Thank you', body);
}

export function findOrderPage(conference: ConferenceView, values: Fields, error?: string): SafeHtml {
  const body = html`<h1>Locate registration</h1>
${error === undefined ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="/${conference.slug}/order/find">
<label for="email">Email address</label><input type="email" id="email" name="email" value="${values.email ?? ''}">
<label for="accessCode">Order #</label><input type="text" id="accessCode" name="accessCode" value="${values.accessCode ?? ''}">
<p><button type="submit" id="find" name="find">Find</button></p>
</form>`;
  return conferencePage(conference, 'Locate registration', body);
}

function attendeeText(attendee: PersonalInfo | null): string {
  return attendee === null
    ? 'Not assigned'
    : `${attendee.firstName} ${attendee.lastName} <${attendee.email}>`;
}

/** The order, and its attendees once it is confirmed (`assignments` undefined before). */
export function orderDetailsPage(
  conference: ConferenceView,
  order: OrderView,
  assignments: AssignmentsView | undefined,
): SafeHtml {
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
<tbody>${orderLineRows(conference, order)}</tbody><tfoot><tr><th colspan="3" class="num">Total:</th><th class="num">${money(order.totalCents)}</th></tr></tfoot></table>
${seats}`;
  return conferencePage(conference, 'Registration details', body);
}
