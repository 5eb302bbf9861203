// HTTP rate limiting: httpRateLimit guards a node:http server (or Express, Fastify's raw request): it charges each
// request to a key, writes the RateLimit fields, and answers 429 Too Many Requests with Retry-After itself.
// Prints:
//   GET / -> 200, RateLimit-Remaining 1
//   GET / -> 200, RateLimit-Remaining 0
//   GET / -> 429, Retry-After 60
//   RateLimit-Policy: "api";q=2;w=120
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpRateLimit, tokenBucket } from '@stratus/resilience';

// Two requests at once per client, then one a minute.
const guard = httpRateLimit({
  limiter: tokenBucket({ name: 'api', capacity: 2, refillRate: 1, refillIntervalMs: 60_000 }),
  key: (request) => request.socket.remoteAddress ?? 'unknown',
});
const server = createServer(async (request, response) => {
  if (!(await guard(request, response))) return; // already answered 429
  response.end('hello\n');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

let policy = '';
for (let i = 0; i < 3; i++) {
  const response = await fetch(url);
  await response.text();
  policy = response.headers.get('ratelimit-policy') ?? '';
  console.log(
    response.status === 429
      ? `GET / -> 429, Retry-After ${response.headers.get('retry-after')}`
      : `GET / -> ${response.status}, RateLimit-Remaining ${response.headers.get('ratelimit-remaining')}`,
  );
}
console.log(`RateLimit-Policy: ${policy}`);
server.close();
server.closeAllConnections();
