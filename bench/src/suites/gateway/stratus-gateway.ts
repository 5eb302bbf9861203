// The Stratus gateway as the bench runs it: its own process, one route to the upstream given as argv[2], no listener
// on its events. With `offload <redis url> <log file>`, the route also requires an RS256 JWT checked against a JWKS
// (served here, on loopback), counts against a rate limit shared through Redis (high enough never to refuse), and
// every request is written to an access log (pino, to the file). Prints READY <url> [<token>].
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway } from '@stratus/edge';
import { RedisRateLimitStore } from '@stratus/resilience';
import { Redis } from 'ioredis';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { pino } from 'pino';

const [upstream, mode, redisUrl, logFile] = process.argv.slice(2);
if (upstream === undefined)
  throw new Error('usage: stratus-gateway.ts <upstream url> [offload <redis url> <log file>]');

if (mode !== 'offload') {
  const gateway = await startGateway({
    config: { upstreams: { app: { targets: [upstream] } }, routes: [{ upstream: 'app' }] },
    port: 0,
  });
  console.log(`READY ${gateway.url}`);
  process.once('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
} else {
  if (redisUrl === undefined || logFile === undefined)
    throw new Error('offload needs a Redis URL and a log file');
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' };
  const jwks = createServer((_request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  const token = await new SignJWT({ sub: 'bench-user' })
    .setProtectedHeader({ alg: 'RS256', kid: 'bench' })
    .setIssuer('https://idp.bench')
    .setAudience('bench')
    .setExpirationTime('2h')
    .sign(privateKey);
  const client = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const gateway = await startGateway({
    config: {
      upstreams: { app: { targets: [upstream] } },
      auth: {
        users: {
          jwt: {
            jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
            issuer: 'https://idp.bench',
            audience: 'bench',
            claimsToHeaders: { sub: 'x-user-id' },
          },
        },
      },
      rateLimits: { 'per-client': { limit: 1_000_000, windowMs: 1_000 } },
      routes: [{ upstream: 'app', auth: 'users', rateLimit: 'per-client' }],
    },
    rateLimitStore: new RedisRateLimitStore({ client, prefix: 'bench:gateway:' }),
    port: 0,
  });
  const log = pino(pino.destination({ dest: logFile, sync: false }));
  gateway.gateway.events.on((event) => {
    if (event.type === 'request') log.info(event, 'request');
  });
  console.log(`READY ${gateway.url} ${token}`);
  process.once(
    'SIGTERM',
    () =>
      void gateway.close().then(() => {
        client.disconnect();
        jwks.close();
        log.flush();
        process.exit(0);
      }),
  );
}
