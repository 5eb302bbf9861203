// The upstream when nginx is not installed: a node:http server answering every request with the same 1 KiB of JSON,
// keep-alive. Prints READY <url>.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UPSTREAM_BODY } from './body.js';

const body = Buffer.from(UPSTREAM_BODY);
const server = createServer({ keepAliveTimeout: 60_000 }, (_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  response.end(body);
});
server.listen(0, '127.0.0.1', () => {
  console.log(`READY http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.once('SIGTERM', () => server.close(() => process.exit(0)));
