/** What the owner's pages share: the frame, message pages, the conference's base address and form inputs. */
import type { Conference } from '../../../domain/conference.js';
import { type HtmlValue, html, type SafeHtml } from '../html.js';
import { fieldError, page } from '../layout.js';

export const OWNER_TEXT = {
  title: 'Contoso Conference Management Portal',
  invalidAccessCode: 'Invalid access code.',
  notFound: 'The conference could not be found.',
  locateFailed: 'Could not locate a conference with the provided email and access code.',
  slugTaken: 'The chosen conference slug is already taken.',
  cannotDelete: "Can't delete seats from a conference that has been published at least once.",
} as const;

export function ownerPage(title: string, body: HtmlValue): SafeHtml {
  return page({ site: 'owner', title, body });
}

export function ownerMessagePage(title: string, text: string): SafeHtml {
  return ownerPage(title, html`<h1>${title}</h1><p class="error" role="alert">${text}</p>`);
}

/** Where the owner manages the conference (with the owner's session: the access code is never in a URL). */
export function manageUrl(conference: Pick<Conference, 'slug'>): string {
  return `/manage/${conference.slug}`;
}

/** The sign-in form, for the conference `slug` when given. */
export function signInUrl(slug?: string): string {
  return slug === undefined ? '/manage/sign-in' : `/manage/sign-in?${new URLSearchParams({ slug })}`;
}

/** A labelled input (or textarea) with its error message. */
export function input(
  name: string,
  label: string,
  type: string,
  value: string,
  errors: Readonly<Record<string, string>>,
): SafeHtml {
  const control =
    type === 'textarea'
      ? html`<textarea id="${name}" name="${name}">${value}</textarea>`
      : html`<input type="${type}" id="${name}" name="${name}" value="${value}">`;
  return html`<label for="${name}">${label}</label>${control}${fieldError(errors, name)}`;
}
