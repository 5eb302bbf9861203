/** What the public site's pages share: the frame with the conference's header, message pages, order lines. */
import type { ConferenceView } from '../../../read-models/conference-view.js';
import type { OrderView } from '../../../read-models/order-view.js';
import { type HtmlValue, html, type SafeHtml } from '../html.js';
import { formatRemaining, money, page } from '../layout.js';
import { expiredUrl } from './public-urls.js';

/** How long an order's seats are still held, for the countdown (null: the order has no deadline). */
export interface Hold {
  readonly orderId: string;
  readonly remainingMs: number | null;
}

export function conferencePage(
  conference: ConferenceView,
  title: string,
  body: HtmlValue,
  extra: { refreshSeconds?: number; countdown?: boolean } = {},
): SafeHtml {
  return page({ site: 'public', conference, title, body, ...extra });
}

/** A page that only says `text`, under the conference's header when there is one. */
export function messagePage(conference: ConferenceView | undefined, title: string, text: string): SafeHtml {
  const body = html`<h1>${title}</h1><p class="error">${text}</p>`;
  return page({ site: 'public', title, body, ...(conference ? { conference } : {}) });
}

export const seatName = (conference: ConferenceView, seatTypeId: string) =>
  conference.seatTypes.find((seat) => seat.id === seatTypeId)?.name ?? 'Seat';

/** How many seats an order holds or asks for on one line, as its priced totals count them. */
function lineQuantity(order: OrderView, line: OrderView['lines'][number]): number {
  return order.status === 'pending' ? line.requested : line.reserved;
}

/** The rows of an order's lines (type, price, quantity, total), those with seats only. */
export function orderLineRows(conference: ConferenceView, order: OrderView): SafeHtml[] {
  return order.lines
    .filter((line) => lineQuantity(order, line) > 0)
    .map(
      (line) =>
        html`<tr><td>${seatName(conference, line.seatTypeId)}</td><td class="num">${money(line.unitPriceCents)}</td><td class="num">${lineQuantity(order, line)}</td><td class="num">${money(line.lineTotalCents)}</td></tr>`,
    );
}

export function countdown(conference: ConferenceView, hold: Hold): SafeHtml {
  if (hold.remainingMs === null) return html``;
  const remaining = hold.remainingMs;
  const time = formatRemaining(remaining);
  return html`<div id="countdown" class="countdown" data-remaining-ms="${remaining}" data-expired-url="${expiredUrl(conference, hold.orderId)}">
Please complete registration within <strong class="countdown-time">${time}</strong> minutes. After <strong class="countdown-time">${time}</strong> minutes, the reservation we're holding will be released to others.
</div>`;
}
