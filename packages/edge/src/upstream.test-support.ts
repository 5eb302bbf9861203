import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { request as undiciRequest } from 'undici';

/** A real HTTP server on loopback standing in for a service behind the gateway. */
export interface TestUpstream {
  readonly name: string;
  readonly url: string;
  /** Requests it received: method, url and headers, in arrival order. */
  readonly seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  /** Replaces how it answers (default: echo as JSON). */
  answer(handler: (request: IncomingMessage, response: ServerResponse, body: string) => void): void;
  close(): Promise<void>;
}

export function echo(name: string) {
  return (request: IncomingMessage, response: ServerResponse, body: string) => {
    const payload = JSON.stringify({ upstream: name, method: request.method, url: request.url, body });
    response.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
    });
    response.end(payload);
  };
}

export async function startUpstream(name: string): Promise<TestUpstream> {
  const seen: TestUpstream['seen'] = [];
  let handler = echo(name);
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      handler(request, response, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    seen,
    answer(next) {
      handler = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port with nothing listening on it (taken, then freed). */
export async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

/** One request to the gateway; `headers` may set Host. */
export async function call(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const response = await undiciRequest(new URL(path, base), {
    method: (options.method ?? 'GET') as 'GET',
    headers: options.headers ?? {},
    body: options.body ?? null,
  });
  const text = await response.body.text();
  return {
    status: response.statusCode,
    headers: response.headers,
    text,
    json: <T>() => JSON.parse(text) as T,
  };
}

/** Writes raw bytes to the gateway and reads until it closes or goes quiet. */
export function rawExchange(base: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    let data = '';
    socket.setTimeout(2_000, () => socket.destroy());
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
    });
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
    // Not end(): a half-closed client may get no answer. Every request here ends with Connection: close or a 400.
    socket.write(bytes);
  });
}
