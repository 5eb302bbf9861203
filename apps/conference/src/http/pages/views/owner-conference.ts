/** The owner's pages about a conference: the portal's home, log in and sign in, create, details, edit. */
import type { Conference } from '../../../domain/conference.js';
import type { ConferenceDetails } from '../../../domain/contracts.js';
import { type HtmlValue, html, type SafeHtml } from '../html.js';
import type { Fields } from '../support.js';
import { input, manageUrl, OWNER_TEXT, ownerPage } from './owner-page.js';

/** The form fields of a conference and the domain's names for their errors. */
const DETAIL_FIELDS: readonly { name: keyof ConferenceDetails; label: string; type: string }[] = [
  { name: 'name', label: 'Title', type: 'text' },
  { name: 'tagline', label: 'Tagline', type: 'text' },
  { name: 'location', label: 'Location', type: 'text' },
  { name: 'twitterSearch', label: 'Twitter search', type: 'text' },
  { name: 'description', label: 'Description', type: 'textarea' },
  { name: 'startDate', label: 'Start date', type: 'date' },
  { name: 'endDate', label: 'End date', type: 'date' },
];

export function ownerHomePage(): SafeHtml {
  return ownerPage(
    OWNER_TEXT.title,
    html`<h1>${OWNER_TEXT.title}</h1>
<nav class="actions"><a class="button" href="/manage/sign-in">Sign in</a><a class="button" href="/manage/locate">Log in by e-mail</a><a class="button" href="/manage/create">Create Conference</a></nav>`,
  );
}

export function locatePage(email: string, error?: string): SafeHtml {
  return ownerPage(
    'Log in',
    html`<h1>Locate your conference</h1>
${error === undefined ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="/manage/locate">
<label for="email">Email address</label><input type="email" id="email" name="email" value="${email}">
<label for="accessCode">Access code</label><input type="text" id="accessCode" name="accessCode" value="">
<p><button type="submit">Login</button></p></form>`,
  );
}

/** Sign in to a conference's owner pages with its slug and access code (posted: never a code in a URL). */
export function signInPage(slug: string, error?: string): SafeHtml {
  return ownerPage(
    'Sign in',
    html`<h1>Sign in to your conference</h1>
${error === undefined ? '' : html`<p class="error" role="alert">${error}</p>`}
<form method="post" action="/manage/sign-in">
<label for="slug">Slug/conference code</label><input type="text" id="slug" name="slug" value="${slug}">
<label for="accessCode">Access code</label><input type="password" id="accessCode" name="accessCode" value="" autocomplete="current-password">
<p><button type="submit" id="sign-in">Sign in</button></p></form>`,
  );
}

export function createConferencePage(values: Fields, errors: Readonly<Record<string, string>>): SafeHtml {
  const value = (name: string) => values[name] ?? '';
  return ownerPage(
    'Create Conference',
    html`<h1>Create Conference</h1>
<form method="post" action="/manage/create">
<h2>Owner</h2>
${input('ownerName', 'Name', 'text', value('ownerName'), errors)}
${input('ownerEmail', 'Email address', 'email', value('ownerEmail'), errors)}
<h2>Conference</h2>
${input('slug', 'Slug/conference code', 'text', value('slug'), errors)}
${DETAIL_FIELDS.map((field) => input(field.name, field.label, field.type, value(field.name), errors))}
<p><button type="submit" id="save">Save conference</button></p>
</form>`,
  );
}

export function conferenceDetailsPage(conference: Conference): SafeHtml {
  const { details, owner } = conference;
  const base = manageUrl(conference);
  const row = (label: string, value: HtmlValue) => html`<dt>${label}</dt><dd>${value}</dd>`;
  return ownerPage(
    'Conference details',
    html`<h1>Conference details</h1>
<dl>
${row('Owner', owner.name)}${row('Email address', owner.email)}
${row('Access Code', html`<span class="access-code" id="access-code">${conference.accessCode}</span>`)}
${row('Title', details.name)}${row('Tagline', details.tagline)}${row('Slug', conference.slug)}
${row('Location', details.location)}${row('Twitter search', details.twitterSearch)}${row('Description', details.description)}
${row('Dates', `${details.startDate} – ${details.endDate}`)}
${row('Status', html`<span id="publish-status">${conference.isPublished ? 'Published' : 'Not published'}</span>`)}
</dl>
<nav class="actions"><a href="${base}/edit">Edit</a><a href="${base}/seats">Configure seats</a><a href="${base}/orders">Orders</a>
${conference.isPublished ? html`<a href="/${conference.slug}">Public page</a>` : ''}</nav>
<form method="post" action="${base}/${conference.isPublished ? 'unpublish' : 'publish'}">
<button type="submit" id="publish">${conference.isPublished ? 'Unpublish' : 'Publish'}</button></form>
<form method="post" action="${base}/access-code"><p>A new access code replaces this one: the old code and every session signed in with it stop working.</p>
<button type="submit" id="rotate-access-code" class="secondary">Rotate access code</button></form>
<form method="post" action="${base}/sign-out"><button type="submit" id="sign-out" class="secondary">Sign out</button></form>`,
  );
}

export function editConferencePage(
  conference: Conference,
  values: Fields,
  errors: Readonly<Record<string, string>>,
): SafeHtml {
  const base = manageUrl(conference);
  return ownerPage(
    'Edit conference',
    html`<h1>Edit conference</h1>
<dl><dt>Owner</dt><dd>${conference.owner.name} (${conference.owner.email})</dd><dt>Access Code</dt><dd>${conference.accessCode}</dd><dt>Slug</dt><dd>${conference.slug}</dd></dl>
<form method="post" action="${base}/edit">
${DETAIL_FIELDS.map((field) => input(field.name, field.label, field.type, values[field.name] ?? '', errors))}
<p><a class="button secondary" href="${base}">Cancel</a><button type="submit">Save</button></p>
</form>`,
  );
}
