/** The public site's list of conferences: published ones only, a page at a time, with links between the pages. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { uuidv7 } from '@stratus/core';
import type { FastifyInstance } from 'fastify';
import type { ConferenceSystem } from '../../app/system.js';
import { startTestServer, type TestServer } from '../fixtures/test-server.js';
import { CONFERENCES_PER_PAGE } from './routes/conference-home.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-list-'));
let server: TestServer;
let system: ConferenceSystem;
let app: FastifyInstance;
before(async () => {
  server = await startTestServer({ STRATUS_DATA_DIR: directory });
  ({ system, app } = server);
});
after(async () => {
  await server?.stop();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

const details = {
  description: 'Listed or not',
  location: 'Porto',
  tagline: 'One of many',
  twitterSearch: '',
  startDate: '2027-09-01',
  endDate: '2027-09-02',
};

let created = 0;
async function createConference(publish: boolean): Promise<{ id: string; slug: string }> {
  const slug = `list-${++created}`;
  const { conferenceId } = await system.management.create({
    slug,
    owner: { name: 'Lia', email: 'lia@example.com' },
    details: { ...details, name: `Conference ${created}` },
  });
  if (publish) await system.management.publish(conferenceId);
  return { id: conferenceId, slug };
}

/** The slugs a list page links to, and its links to other pages. */
async function listPage(url: string) {
  const response = await app.inject({ method: 'GET', url });
  assert.equal(response.statusCode, 200, response.body);
  const slugs = [...response.body.matchAll(/<li><a href="\/([^"]+)">/g)].map((match) => match[1]);
  const link = (rel: string) => new RegExp(`rel="${rel}" href="([^"]+)"`).exec(response.body)?.[1];
  return { slugs, next: link('next'), previous: link('prev'), body: response.body };
}

describe('the list of conferences', () => {
  test('shows only published conferences, a page at a time, with links to the next and previous pages', async () => {
    assert.equal(CONFERENCES_PER_PAGE, 20);
    assert.match((await listPage('/')).body, /No conference is open for registration yet\./);
    const listed: { id: string; slug: string }[] = [];
    const hidden: string[] = [];
    for (let i = 0; i < 36; i++) {
      // Every sixth one is not published, and half of those were published once.
      const publish = i % 6 !== 5;
      const conference = await createConference(publish || i % 12 === 11);
      if (publish) listed.push(conference);
      else hidden.push(conference.slug);
      if (!publish && i % 12 === 11) await system.management.unpublish(conference.id);
    }
    assert.equal(listed.length, 30);
    // By conference id: in the order they were created (to the millisecond, which their ids keep).
    const published = listed.sort((a, b) => (a.id < b.id ? -1 : 1)).map((conference) => conference.slug);
    const caughtUp = await system.waitFor(async () => {
      const views = await Promise.all(published.map((slug) => system.queries.conferenceBySlug(slug)));
      const hiddenViews = await Promise.all(hidden.map((slug) => system.queries.conferenceBySlug(slug)));
      const done =
        views.every((view) => view?.isPublished) && hiddenViews.every((view) => view?.isPublished === false);
      return done ? true : undefined;
    }, 10_000);
    assert.equal(caughtUp, true, 'the views caught up');

    const first = await listPage('/');
    assert.deepEqual(first.slugs, published.slice(0, 20), 'the first 20');
    assert.equal(first.previous, undefined);
    assert.ok(first.next);
    const second = await listPage(first.next);
    assert.deepEqual(second.slugs, published.slice(20));
    assert.equal(second.next, undefined);
    assert.ok(second.previous);
    const back = await listPage(second.previous);
    assert.deepEqual(back.slugs, first.slugs);
    assert.equal(back.previous, undefined);
    for (const slug of hidden) {
      assert.ok(!first.body.includes(`/${slug}"`) && !second.body.includes(`/${slug}"`), `${slug} is hidden`);
    }

    // The list follows changes: a new name, and a conference taken off.
    const renamed = await system.queries.conferenceBySlug(published[0] as string);
    assert.ok(renamed);
    await system.management.update(renamed.id, { ...details, name: 'Renamed Conference' });
    await system.management.unpublish(
      (await system.queries.conferenceBySlug(published[1] as string))?.id ?? '',
    );
    const changed = await system.waitFor(async () => {
      const page = await listPage('/');
      return page.body.includes('Renamed Conference') && !page.slugs.includes(published[1])
        ? page
        : undefined;
    }, 10_000);
    assert.ok(changed, 'the list shows the change');
    assert.deepEqual(changed.slugs, [published[0], ...published.slice(2, 21)]);
  });

  test('a cursor that is not a conference id, or two cursors, answer 400', async () => {
    for (const query of ['after=nope', 'before=1', `after=${uuidv7()}&before=${uuidv7()}`]) {
      const response = await app.inject({ method: 'GET', url: `/?${query}` });
      assert.equal(response.statusCode, 400, query);
    }
    assert.equal((await app.inject({ method: 'GET', url: `/?after=${uuidv7()}` })).statusCode, 200);
  });
});
