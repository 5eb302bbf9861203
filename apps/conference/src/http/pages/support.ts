/** What both sites share: their context, reading form fields and query strings, ids, and sending pages and redirects. */
import type { FastifyReply } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import type { AbuseLimits } from '../limits/abuse-limits.js';
import type { SafeHtml } from './html.js';
import type { SiteAccess } from './site-access.js';

/** What the sites' routes work with. */
export interface Site {
  readonly system: ConferenceSystem;
  /** Order tokens and owner sessions, in cookies. */
  readonly access: SiteAccess;
  readonly limits: AbuseLimits;
}

/** Text fields of a parsed form body or query string (the first of repeated keys; anything else dropped). */
export type Fields = Readonly<Record<string, string>>;

export function fieldsOf(source: unknown): Fields {
  const fields: Record<string, string> = {};
  if (typeof source !== 'object' || source === null) return fields;
  for (const [key, value] of Object.entries(source)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') fields[key] = first;
  }
  return fields;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isId(value: string | undefined): value is string {
  return value !== undefined && UUID.test(value);
}

/** A whole number written in decimal digits within [min, max], else undefined. */
export function wholeNumber(value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined || !/^\d{1,9}$/.test(value.trim())) return undefined;
  const number = Number(value.trim());
  return number >= min && number <= max ? number : undefined;
}

export function sendPage(reply: FastifyReply, status: number, page: SafeHtml): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(page.value);
}

/** POST-redirect-GET (and GET redirects): 303 so the browser follows with a GET. */
export function seeOther(reply: FastifyReply, url: string): FastifyReply {
  return reply.redirect(url, 303);
}

/** A path on this site (for return URLs handed around in query strings): no scheme, no host, no backslash. */
export function isLocalPath(value: string | undefined): value is string {
  return (
    typeof value === 'string' &&
    value.startsWith('/') &&
    !value.startsWith('//') &&
    !value.includes('\\') &&
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this rejects
    !/[\u0000-\u001f]/.test(value)
  );
}

/** How long a page waits for the eventually consistent views (the Journey polls every 750 ms for up to 5 s). */
export const VIEW_WAIT_MS = 5_000;
