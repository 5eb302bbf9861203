/** The list of published conferences and a conference's home page. */
import type { ConferenceView } from '../../../read-models/conference-view.js';
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';
import { conferencePage } from './public-page.js';
import { PUBLIC_TEXT } from './public-text.js';

export function conferenceListPage(conferences: readonly ConferenceView[]): SafeHtml {
  const rows = conferences.map(
    (conference) =>
      html`<li><a href="/${conference.slug}">${conference.name}</a> — ${conference.tagline} (${conference.location}, ${conference.startDate})</li>`,
  );
  return page({
    site: 'public',
    title: 'List of conferences',
    body: html`<h1>List of conferences</h1>${rows.length === 0 ? html`<p>No conference is open for registration yet.</p>` : html`<ul>${rows}</ul>`}`,
  });
}

export function conferenceHomePage(conference: ConferenceView): SafeHtml {
  return conferencePage(
    conference,
    conference.name,
    html`<h1>${conference.name}</h1>
<p>${conference.tagline}</p>
<dl><dt>When</dt><dd>${conference.startDate} – ${conference.endDate}</dd><dt>Where</dt><dd>${conference.location}</dd></dl>
<p>${conference.description}</p>
<nav class="actions">${
      conference.isPublished
        ? html`<a class="button" href="/${conference.slug}/register">Register</a>`
        : html`<span class="notice">${PUBLIC_TEXT.notOpen}</span>`
    } <a href="/${conference.slug}/order/find">Locate Registration</a></nav>`,
  );
}
