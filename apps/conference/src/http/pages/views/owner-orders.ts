/** The owner's "Orders & Attendees": every order with its registrant and the attendees named so far. */
import type { Conference } from '../../../domain/conference.js';
import type { AssignmentsView, ConferenceOrderView } from '../../../read-models/order-view.js';
import { html, type SafeHtml } from '../html.js';
import { money } from '../layout.js';
import { manageUrl, ownerPage } from './owner-page.js';

export interface OwnerOrder {
  readonly order: ConferenceOrderView;
  readonly assignments: AssignmentsView | undefined;
}

export function ordersPage(conference: Conference, orders: readonly OwnerOrder[]): SafeHtml {
  const seatName = (id: string) =>
    conference.seatTypes.find((seat) => seat.seatTypeId === id)?.name ?? 'Seat';
  const rows = orders.map(({ order, assignments }) => {
    const attendees = (assignments?.seats ?? [])
      .filter((seat) => seat.attendee !== null)
      .map(
        (seat) =>
          html`<li>${seatName(seat.seatTypeId)}: ${seat.attendee?.lastName} ${seat.attendee?.firstName}, ${seat.attendee?.email}</li>`,
      );
    const registrant = order.registrant;
    return html`<tr><td>${order.accessCode}</td><td>${order.status === 'paid' ? 'Paid' : 'Pending'}</td><td class="num">${money(order.totalCents)}</td>
<td>${registrant === null ? '' : `${registrant.lastName}, ${registrant.firstName}`}</td><td>${registrant?.email ?? ''}</td><td><ul>${attendees}</ul></td></tr>`;
  });
  return ownerPage(
    'Orders & Attendees',
    html`<h1>Orders &amp; Attendees</h1>
<p><a href="${manageUrl(conference)}">Back to the conference</a></p>
<table id="orders"><thead><tr><th>Order Code</th><th>Status</th><th class="num">Total Amount ($)</th><th>Registrant Name</th><th>Registrant Email</th><th>Attendees</th></tr></thead>
<tbody>${rows.length === 0 ? html`<tr><td colspan="6">No orders yet.</td></tr>` : rows}</tbody></table>`,
  );
}
