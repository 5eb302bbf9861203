/**
 * Pages that say where an order stands instead of the page asked for: still being processed (the eventually
 * consistent views have not caught up: retry), already completed, or expired.
 */
import type { ConferenceView } from '../../../read-models/conference-view.js';
import { html, type SafeHtml } from '../html.js';
import { conferencePage } from './public-page.js';
import { PUBLIC_TEXT } from './public-text.js';

export function orderUnknownPage(conference: ConferenceView, retryUrl: string): SafeHtml {
  return conferencePage(
    conference,
    'Registration',
    html`<h1>${PUBLIC_TEXT.orderUnknown}</h1>
<p>We are still processing your registration. This page refreshes in a few seconds.</p>
<p><a class="button" href="${retryUrl}">Try again</a></p>`,
    { refreshSeconds: 5 },
  );
}

/** The payment form again, to post once the seats are reserved. */
export function reservationUnknownPage(
  conference: ConferenceView,
  payment: { readonly orderId: string; readonly orderVersion: number; readonly paymentType: string },
): SafeHtml {
  return conferencePage(
    conference,
    'Seat reservation',
    html`<h1>${PUBLIC_TEXT.reservationUnknown}</h1>
<p>We are still reserving your seats. Please try again in a few seconds.</p>
<form method="post" action="/${conference.slug}/pay">
<input type="hidden" name="orderId" value="${payment.orderId}"><input type="hidden" name="orderVersion" value="${payment.orderVersion}">
<input type="hidden" name="paymentType" value="${payment.paymentType}">
<button type="submit">Retry</button></form>`,
  );
}

export function paymentUnknownPage(conference: ConferenceView): SafeHtml {
  return conferencePage(
    conference,
    'Payment',
    html`<h1>${PUBLIC_TEXT.paymentUnknown}</h1><p>This page refreshes in a few seconds.</p>`,
    { refreshSeconds: 5 },
  );
}

export function completedOrderPage(conference: ConferenceView, orderId: string): SafeHtml {
  return conferencePage(
    conference,
    'Order completed',
    html`<h1>${PUBLIC_TEXT.completed}</h1>
<p>The order can no longer be changed.</p>
<p><a class="button" href="/${conference.slug}/order/${orderId}">Go to my registration</a></p>`,
  );
}

export function expiredPage(conference: ConferenceView): SafeHtml {
  return conferencePage(
    conference,
    'Order expired',
    html`<h1>${PUBLIC_TEXT.expired}</h1><p>${PUBLIC_TEXT.released}</p>
<p><a class="button" href="/${conference.slug}/register">Start a new registration</a></p>`,
  );
}
