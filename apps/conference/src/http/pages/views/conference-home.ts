/** The list of published conferences and a conference's home page. */
import type { Page } from '../../../app/queries.js';
import type { ConferenceView, PublishedConferenceView } from '../../../read-models/conference-view.js';
import { html, type SafeHtml } from '../html.js';
import { page } from '../layout.js';
import { conferencePage } from './public-page.js';
import { PUBLIC_TEXT } from './public-text.js';

/** A page of the published conferences, with links to the pages beside it. */
export function conferenceListPage(list: Page<PublishedConferenceView>): SafeHtml {
  const rows = list.items.map(
    (conference) =>
      html`<li><a href="/${conference.slug}">${conference.name}</a> — ${conference.tagline} (${conference.location}, ${conference.startDate})</li>`,
  );
  const empty =
    list.previous === undefined ? 'No conference is open for registration yet.' : 'No more conferences.';
  const links = [
    list.previous === undefined ? '' : html`<a rel="prev" href="/?before=${list.previous}">Previous</a>`,
    list.next === undefined ? '' : html`<a rel="next" href="/?after=${list.next}">Next</a>`,
  ];
  return page({
    site: 'public',
    title: 'List of conferences',
    body: html`<h1>List of conferences</h1>${rows.length === 0 ? html`<p>${empty}</p>` : html`<ul>${rows}</ul>`}
${list.previous === undefined && list.next === undefined ? '' : html`<nav class="actions">${links}</nav>`}`,
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
