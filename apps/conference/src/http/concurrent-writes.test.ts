/**
 * Writes to one conference at the same time, through the API and the owner site, on every backend: each one is
 * done or answered 409 (it lost the race to the others, retries included), never 500, as the OpenAPI document says.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { CONCURRENT_WRITE_MESSAGE } from './concurrent-write.js';
import { openApiDocument } from './openapi.js';

interface OpenApiOperation {
  readonly responses: Readonly<Record<string, { readonly description: string } | undefined>>;
}

import { testBackends } from './fixtures/test-backends.js';
import { startTestServer, type TestServer } from './fixtures/test-server.js';

const backends = await testBackends('conference-concurrent-writes');

const details = {
  name: 'Race Summit',
  description: 'Everyone at once',
  location: 'Oslo',
  tagline: 'First come',
  startDate: '2030-06-01',
  endDate: '2030-06-02',
};

/** Done (2xx, or a redirect after a form), or 409 saying what happened. */
function assertDoneOrConflict(response: LightMyRequestResponse, what: string): void {
  if (response.statusCode === 409) {
    assert.ok(response.body.includes(CONCURRENT_WRITE_MESSAGE), `${what}: ${response.body.slice(0, 300)}`);
    return;
  }
  assert.ok(response.statusCode < 400, `${what}: ${response.statusCode} ${response.body.slice(0, 300)}`);
}

test('the OpenAPI document names the 409 of every write to what an id names', () => {
  const document = openApiDocument() as { paths: Record<string, Record<string, OpenApiOperation>> };
  const writes = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => method !== 'get' && /\{(id|orderId|paymentId)\}/.test(path))
      .map(([method, operation]) => [`${method} ${path}`, operation.responses['409']?.description] as const),
  );
  assert.equal(writes.length, 14);
  for (const [write, description] of writes)
    assert.ok(description?.includes(CONCURRENT_WRITE_MESSAGE), `${write}: ${description}`);
  const login = document.paths['/api/owner/login']?.post;
  assert.equal(login?.responses['409'], undefined);
});

for (const backend of backends) {
  describe(`concurrent writes to one conference on ${backend.name}`, { skip: backend.skip }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend.env());
    });
    after(() => server?.stop());

    test('are each done or answered 409 (API and owner site), never 500', async () => {
      const { app } = server;
      const slug = `race_${Date.now().toString(36)}`;
      const created = await app.inject({
        method: 'POST',
        url: '/api/conferences',
        payload: { ...details, slug, ownerName: 'Rae', ownerEmail: 'rae@example.com' },
      });
      assert.equal(created.statusCode, 201, created.body);
      const { id, accessCode } = created.json();
      const login = await app.inject({
        method: 'POST',
        url: '/api/owner/login',
        payload: { email: 'rae@example.com', accessCode },
      });
      const headers = { authorization: `Bearer ${login.json().token}` };
      const manage = `/manage/${slug}/${accessCode}`;
      const writes = Array.from({ length: 16 }, (_, i) => [
        app.inject({
          method: 'POST',
          url: `/api/conferences/${id}/${i % 2 ? 'publish' : 'unpublish'}`,
          headers,
        }),
        app.inject({
          method: 'PATCH',
          url: `/api/conferences/${id}`,
          headers,
          payload: { name: `Race ${i}` },
        }),
        app.inject({
          method: 'POST',
          url: `${manage}/edit`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ ...details, name: `Race site ${i}` }).toString(),
        }),
        app.inject({ method: 'POST', url: `${manage}/${i % 2 ? 'unpublish' : 'publish'}` }),
      ]).flat();
      const answers = await Promise.all(writes);
      for (const [i, answer] of answers.entries()) assertDoneOrConflict(answer, `write ${i}`);
      // What won is there to read.
      assert.equal(
        (await app.inject({ method: 'GET', url: `/api/conferences/${id}`, headers })).statusCode,
        200,
      );
    });
  });
}
