import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` listening and resolves with its http://host:port URL (IPv6 hosts in brackets). */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/** Stops accepting and closes idle keep-alive connections; resolves once the requests in flight are answered. */
export async function stopListening(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await closed;
}
