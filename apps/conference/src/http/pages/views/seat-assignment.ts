/** "Assign Seats": a name and e-mail per seat of a confirmed order. */
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { AssignmentsView } from '../../../read-models/order-view.js';
import { html, type SafeHtml } from '../html.js';
import type { Fields } from '../support.js';
import { conferencePage, seatName } from './public-page.js';

type AttendeeField = 'firstName' | 'lastName' | 'email';

/**
 * The form, filled with the attendees as assigned, or with what was posted (`values`); `errors` by seat position.
 */
export function assignSeatsPage(
  conference: ConferenceView,
  assignments: AssignmentsView,
  values: Fields | undefined,
  errors: Readonly<Record<string, string>>,
): SafeHtml {
  const rows = assignments.seats.map((seat) => {
    const n = seat.position;
    const value = (field: AttendeeField) =>
      values === undefined ? (seat.attendee?.[field] ?? '') : (values[`${field}_${n}`] ?? '');
    const cell = (field: AttendeeField, label: string) =>
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
  return conferencePage(conference, 'Assign Seats', body);
}
