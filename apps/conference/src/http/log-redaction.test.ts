import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { configFromEnv } from '../app/config.js';
import { type ConferenceSystem, startConferenceSystem } from '../app/system.js';
import { logOptions, redactUrl } from './log-redaction.js';
import { buildServer } from './server.js';

const directory = mkdtempSync(join(tmpdir(), 'conference-logs-'));
const lines: string[] = [];
let system: ConferenceSystem;
let app: FastifyInstance;

before(async () => {
  system = await startConferenceSystem(configFromEnv({ STRATUS_DATA_DIR: directory }));
  const log = pino(logOptions('info'), { write: (line: string) => void lines.push(line) });
  app = await buildServer(system, { loggerInstance: log });
});
after(async () => {
  await app?.close();
  await system?.stop();
  rmSync(directory, { recursive: true, force: true, maxRetries: 10 });
});

describe('redactUrl', () => {
  test("masks the owner's access code, e-mail addresses and secret query values", () => {
    assert.equal(redactUrl('/manage/cqrs/ABC123/seats?x=1'), '/manage/cqrs/[redacted]/seats?x=1');
    assert.equal(redactUrl('/manage/locate'), '/manage/locate');
    // The owner's pages since the sign-in form have no code in their URL: they are logged as they are.
    for (const url of ['/manage/cqrs/edit', '/manage/cqrs/seats/019a/delete', '/manage/cqrs/access-code'])
      assert.equal(redactUrl(url), url);
    assert.equal(
      redactUrl('/api/orders/find?email=ann%40example.com&accessCode=XYZ789&wait=5'),
      '/api/orders/find?email=[redacted]&accessCode=[redacted]&wait=5',
    );
    assert.equal(redactUrl('/x?token=t0k3n&next=ann@example.com'), '/x?token=[redacted]&next=[redacted]');
    assert.equal(redactUrl('/people/ann%40example.com/orders'), '/people/[redacted]/orders');
    assert.equal(redactUrl('/cqrs/order/019a?orderId=1'), '/cqrs/order/019a?orderId=1');
  });
});

describe('the server log', () => {
  test('holds no access code, e-mail address, token or Authorization / Cookie header', async () => {
    const secrets = ['ABC123', 'ann@example.com', 'ann%40example.com', 'XYZ789', 'S3CR3T-T0K3N', 'C00KIE'];
    await app.inject({ method: 'GET', url: '/manage/cqrs/ABC123' });
    await app.inject({ method: 'GET', url: '/manage/cqrs/ABC123/seats?x=1' });
    await app.inject({ method: 'GET', url: '/manage/cqrs/edit' });
    await app.inject({ method: 'GET', url: '/api/orders/find?email=ann%40example.com&accessCode=XYZ789' });
    await app.inject({
      method: 'GET',
      url: '/no/such/route?token=S3CR3T-T0K3N',
      headers: { authorization: 'Bearer S3CR3T-T0K3N', cookie: 'session=C00KIE' },
    });
    app.log.info(
      {
        req: { headers: { authorization: 'Bearer S3CR3T-T0K3N', cookie: 'session=C00KIE' } },
        body: { email: 'ann@example.com', accessCode: 'XYZ789' },
      },
      'what a careless handler might log',
    );
    app.log.error({ err: new Error('no order for ann@example.com') }, 'failed');
    const output = lines.join('');
    // The old owner links are not logged at all; the owner's pages are, as they are.
    assert.match(output, /"url":"\/manage\/cqrs\/edit"/, 'request URLs are still logged');
    assert.match(output, /"url":"\/api\/orders\/find\?email=\[redacted\]&accessCode=\[redacted\]"/);
    assert.match(output, /what a careless handler might log/);
    for (const secret of secrets) assert.equal(output.includes(secret), false, `${secret} is in the log`);
  });
});
