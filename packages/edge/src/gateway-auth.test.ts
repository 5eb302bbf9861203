import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { VirtualClock } from '@stratus/testkit';
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT } from 'jose';
import { type GatewayServer, startGateway } from './index.js';
import { call, startUpstream, type TestUpstream } from './upstream.test-support.js';

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;
const ISSUER = 'https://idp.example.test';
const T0 = Date.UTC(2026, 0, 1);

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('gateway JWT authentication', () => {
  let app: TestUpstream;
  let gateway: GatewayServer;
  let jwks: Server;
  let jwksFetches = 0;
  const published: JWK[] = [];
  let key: KeyPair;
  let other: KeyPair;
  const clock = new VirtualClock({ now: T0 });

  const token = async (
    claims: Record<string, unknown> = {},
    options: { kid?: string; pair?: KeyPair; expSec?: number } = {},
  ) =>
    new SignJWT({ sub: 'user-7', roles: ['admin', 'reader'], iss: ISSUER, aud: 'api', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? 'k1' })
      .setIssuedAt(T0 / 1000)
      .setExpirationTime(T0 / 1000 + (options.expSec ?? 60))
      .sign((options.pair ?? key).privateKey);
  const bearer = (value: string) => ({ authorization: `Bearer ${value}` });

  before(async () => {
    [key, other] = await Promise.all([generateKeyPair('RS256'), generateKeyPair('RS256')]);
    published.push({ ...(await exportJWK(key.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' });
    jwks = createServer((_request, response) => {
      jwksFetches += 1;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    app = await startUpstream('app');
    gateway = await startGateway({
      clock,
      config: {
        upstreams: { app: { targets: [app.url] } },
        auth: {
          users: {
            jwt: {
              jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
              issuer: ISSUER,
              audience: 'api',
              claimsToHeaders: { sub: 'x-user-id', roles: 'x-user-roles' },
              jwksRefreshMinMs: 0,
            },
          },
        },
        routes: [
          { name: 'api', match: { prefix: '/api' }, upstream: 'app', auth: 'users' },
          { name: 'open', upstream: 'app' },
        ],
      },
    });
  });
  after(async () => {
    await gateway.close();
    await app.close();
    jwks.close();
  });

  it('forwards a valid token with its claims as headers, dropping the client’s own copies', async () => {
    const answer = await call(gateway.url, '/api/me', {
      headers: { ...bearer(await token()), 'x-user-id': 'spoofed', 'x-user-roles': 'root' },
    });
    assert.equal(answer.status, 200);
    const seen = app.seen.at(-1);
    assert.equal(seen?.headers['x-user-id'], 'user-7');
    assert.equal(seen?.headers['x-user-roles'], '["admin","reader"]');
    // A claim that would break the header block is not forwarded.
    await call(gateway.url, '/api/me', { headers: bearer(await token({ sub: 'evil\r\nx-admin: 1' })) });
    assert.equal(app.seen.at(-1)?.headers['x-user-id'], undefined);
    assert.equal(app.seen.at(-1)?.headers['x-admin'], undefined);
    // A route without auth passes the headers as the client sent them.
    await call(gateway.url, '/open', { headers: { 'x-user-id': 'anyone' } });
    assert.equal(app.seen.at(-1)?.headers['x-user-id'], 'anyone');
  });

  it('refuses every forged, expired, unsigned, confused or misdirected token, without calling the upstream', async () => {
    const good = await token();
    const [header, payload] = good.split('.');
    const pem = await exportSPKI(key.publicKey);
    const hsHeader = b64({ alg: 'HS256', kid: 'k1' });
    const confused = `${hsHeader}.${payload}.${createHmac('sha256', pem).update(`${hsHeader}.${payload}`).digest('base64url')}`;
    const cases: Record<string, string> = {
      'signed by another key under the same kid': await token({}, { pair: other }),
      'a changed payload': `${header}.${b64({ sub: 'admin', iss: ISSUER, aud: 'api', exp: T0 / 1000 + 60 })}.${good.split('.')[2]}`,
      'alg none': `${b64({ alg: 'none' })}.${payload}.`,
      'HS256 keyed with the public key': confused,
      expired: await token({}, { expSec: -31 }),
      'another issuer': await token({ iss: 'https://evil.example' }),
      'another audience': await token({ aud: 'other-api' }),
      'not valid yet': await token({ nbf: T0 / 1000 + 3600 }),
      'an unknown kid': await token({}, { kid: 'nope' }),
      'not a JWT': 'abc.def',
    };
    const before = app.seen.length;
    for (const [what, value] of Object.entries(cases)) {
      const answer = await call(gateway.url, '/api/me', { headers: bearer(value) });
      assert.equal(answer.status, 401, what);
      assert.match(String(answer.headers['www-authenticate']), /^Bearer error="invalid_token"/, what);
    }
    const missing = await call(gateway.url, '/api/me');
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer');
    assert.equal(app.seen.length, before);
  });

  it('never keeps a verified token past its expiry (and its clock tolerance)', async () => {
    const value = await token({ sub: 'short-lived' }, { expSec: 10 });
    assert.equal((await call(gateway.url, '/api/a', { headers: bearer(value) })).status, 200);
    await clock.advance(39_000); // 29 s past exp: within the 30 s tolerance
    assert.equal((await call(gateway.url, '/api/a', { headers: bearer(value) })).status, 200);
    await clock.advance(2_000);
    assert.equal((await call(gateway.url, '/api/a', { headers: bearer(value) })).status, 401);
    clock.setWallTime(T0);
  });

  it('fetches the key set again for a new key id: a rotation needs nothing of the gateway', async () => {
    const rotated = await generateKeyPair('RS256');
    published.push({ ...(await exportJWK(rotated.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' });
    const fetches = jwksFetches;
    const answer = await call(gateway.url, '/api/a', {
      headers: bearer(await token({}, { kid: 'k2', pair: rotated })),
    });
    assert.equal(answer.status, 200);
    assert.equal(jwksFetches, fetches + 1);
  });
});

describe('gateway API keys and failed authentications', () => {
  const KEY = 'partner-a-secret-key-0123456789abcdef';
  const digest = `sha256:${createHash('sha256').update(KEY).digest('hex')}`;
  let app: TestUpstream;
  let gateway: GatewayServer;

  before(async () => {
    app = await startUpstream('app');
    gateway = await startGateway({
      config: {
        upstreams: { app: { targets: [app.url] } },
        auth: { partners: { apiKeys: { keys: { [digest]: 'partner-a' } } } },
        routes: [{ upstream: 'app', auth: 'partners' }],
      },
    });
  });
  after(async () => {
    await gateway.close();
    await app.close();
  });

  it('forwards the consumer a key names, never the key itself', async () => {
    const answer = await call(gateway.url, '/x', { headers: { 'x-api-key': KEY, 'x-consumer': 'spoofed' } });
    assert.equal(answer.status, 200);
    assert.equal(app.seen.at(-1)?.headers['x-consumer'], 'partner-a');
    assert.equal(app.seen.at(-1)?.headers['x-api-key'], undefined);
  });

  it('answers 401 to wrong keys, then 429 to the client, even with a right key, after 30 in a minute', async () => {
    const statuses = new Map<number, number>();
    for (let i = 0; i < 31; i++) {
      const { status } = await call(gateway.url, '/x', { headers: { 'x-api-key': `wrong-${i}` } });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    assert.deepEqual(
      [...statuses],
      [
        [401, 30],
        [429, 1],
      ],
    );
    const locked = await call(gateway.url, '/x', { headers: { 'x-api-key': KEY } });
    assert.equal(locked.status, 429);
    assert.equal(locked.headers['retry-after'], '60');
  });
});
