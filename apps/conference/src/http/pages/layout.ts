/**
 * The page frame shared by both sites: one small stylesheet, a header naming the site (and the conference on its
 * pages), and the countdown, the only script (progressive enhancement: without it the page still says how long the
 * reservation is held and the server still sends an expired order to the expired page).
 */
import { fromCents } from '../../domain/pricing.js';
import { type HtmlValue, html, raw, type SafeHtml } from './html.js';

export const CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;background:#f5f6f8}
header{background:#24345a;color:#fff;padding:.8rem 1.5rem}
header a{color:#fff;text-decoration:none;font-weight:600}
header .tagline{opacity:.8;margin-left:.8rem;font-size:.9rem}
main{max-width:62rem;margin:1.5rem auto;padding:1.5rem;background:#fff;border-radius:6px;box-shadow:0 1px 3px #0002}
h1{margin-top:0;font-size:1.6rem}
table{border-collapse:collapse;width:100%;margin:1rem 0}
th,td{text-align:left;padding:.45rem .6rem;border-bottom:1px solid #dde1e7;vertical-align:top}
th{background:#eef1f5}
td.num,th.num{text-align:right}
label{display:block;margin:.6rem 0 .2rem;font-weight:600}
input[type=text],input[type=email],input[type=date],input[type=number],textarea,select{font:inherit;padding:.35rem .5rem;border:1px solid #b8c0cc;border-radius:4px;min-width:14rem}
textarea{width:100%;min-height:5rem}
button,.button{font:inherit;display:inline-block;padding:.45rem 1.1rem;border:0;border-radius:4px;background:#2f6fde;color:#fff;cursor:pointer;text-decoration:none;margin:.6rem .4rem .2rem 0}
button.secondary,.button.secondary{background:#6b7685}
button.danger{background:#c23a3a}
button:disabled{background:#aab2bd;cursor:not-allowed}
.error,.field-error{color:#b42318}
.field-error{display:block;font-size:.9rem}
.notice{padding:.7rem 1rem;border-radius:4px;background:#fff6db;border:1px solid #f0d48a;margin:1rem 0}
.success{background:#e6f6ea;border-color:#9fd5ab}
.countdown{padding:.7rem 1rem;border-radius:4px;background:#eaf1ff;border:1px solid #a9c3f5;margin:1rem 0}
.access-code{font-family:ui-monospace,monospace;font-size:1.4rem;letter-spacing:.15rem;background:#eef1f5;padding:.1rem .5rem;border-radius:4px}
.sold-out{color:#b42318;font-weight:600}
dl{display:grid;grid-template-columns:12rem 1fr;gap:.3rem 1rem}
dt{font-weight:600}
dd{margin:0}
nav.actions a{margin-right:1rem}
`;

/**
 * Counts the reservation down in every `.countdown-time` of `#countdown` from its `data-remaining-ms`, and goes to
 * `data-expired-url` at zero. Uses the time left (not the server's clock) so a skewed client clock does not matter.
 */
export const COUNTDOWN_SCRIPT = `
(function(){
  var box=document.getElementById('countdown');
  if(!box)return;
  var end=Date.now()+Number(box.getAttribute('data-remaining-ms'));
  var url=box.getAttribute('data-expired-url');
  var outputs=box.querySelectorAll('.countdown-time');
  function format(ms){var s=Math.max(0,Math.ceil(ms/1000));var m=Math.floor(s/60);s=s%60;return m+':'+(s<10?'0':'')+s;}
  function tick(){
    var left=end-Date.now();
    for(var i=0;i<outputs.length;i++)outputs[i].textContent=format(left);
    if(left<=0){clearInterval(timer);if(url)location.assign(url);}
  }
  var timer=setInterval(tick,1000);
  box.setAttribute('data-live','true');
  tick();
})();
`;

/** "m:ss" for a duration, as the countdown shows it. */
export function formatRemaining(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

export interface PageOptions {
  readonly title: string;
  readonly body: HtmlValue;
  /** The public site's conference, named in the header of every page about it. */
  readonly conference?: { readonly name: string; readonly tagline: string; readonly slug: string };
  readonly site: 'public' | 'owner';
  /** Seconds after which the browser reloads the page (the Journey's "try again shortly" pages). */
  readonly refreshSeconds?: number;
  readonly countdown?: boolean;
}

export function page(options: PageOptions): SafeHtml {
  const { title, body, conference, site } = options;
  const home =
    site === 'owner'
      ? html`<a href="/manage">Contoso Conference Management Portal</a>`
      : conference === undefined
        ? html`<a href="/">Contoso Conferences</a>`
        : html`<a href="/${conference.slug}">${conference.name}</a><span class="tagline">${conference.tagline}</span>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refreshSeconds === undefined ? '' : html`<meta http-equiv="refresh" content="${options.refreshSeconds}">`}
<title>${title}</title>
<style>${raw(CSS)}</style>
</head>
<body>
<header>${home}</header>
<main>
${body}
</main>
${options.countdown ? html`<script>${raw(COUNTDOWN_SCRIPT)}</script>` : ''}
</body>
</html>`;
}

/** A field's error message, if it has one. */
export function fieldError(errors: Readonly<Record<string, string>>, field: string): SafeHtml {
  const message = errors[field];
  return message === undefined ? html`` : html`<span class="field-error" role="alert">${message}</span>`;
}

/** Money in integer cents as a decimal with two places (the Journey's prices). */
export function money(cents: number): string {
  return fromCents(cents).toFixed(2);
}
