/** The public site's addresses that carry a query string (pages link to them, routes redirect to them). */

interface Slugged {
  readonly slug: string;
}

/** `path` with a query string built from `query`. */
export function withQuery(path: string, query: Readonly<Record<string, string | number>>): string {
  const search = new URLSearchParams(
    Object.entries(query).map(([key, value]): [string, string] => [key, String(value)]),
  );
  return `${path}?${search.toString()}`;
}

export const expiredUrl = (conference: Slugged, orderId: string) =>
  withQuery(`/${conference.slug}/expired`, { orderId });

export const registerUrl = (conference: Slugged, orderId: string) =>
  withQuery(`/${conference.slug}/register`, { orderId });

export const registrantUrl = (conference: Slugged, orderId: string, orderVersion: number, rejected = false) =>
  withQuery(`/${conference.slug}/registrant`, {
    orderId,
    orderVersion,
    ...(rejected ? { paymentRejected: 1 } : {}),
  });

export const confirmationUrl = (conference: Slugged, orderId: string) =>
  withQuery(`/${conference.slug}/confirmation`, { orderId });
