import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { InvalidOptionsError } from '@stratus/core';
import type { ConfigWatcher } from './config-file.js';
import type { Gateway } from './gateway.js';
import { listen, stopListening } from './listen.js';
import { Lockout } from './lockout.js';
import type { GatewayMetrics } from './metrics.js';

export interface AdminOptions {
  /** Default 0: any free port. */
  readonly port?: number;
  /** Default 127.0.0.1. Any other address needs a token. */
  readonly host?: string;
  /**
   * The bearer token of /admin/* and, when set, of /metrics (at least 32 characters). Without one, /admin/* is
   * closed and /metrics answers loopback clients only. Required when the listener is not on loopback.
   */
  readonly token?: string;
}

const MIN_TOKEN_LENGTH = 32;
/** Wrong tokens a client may send per minute before it is refused unchecked. */
const FAILED_TOKENS_PER_MINUTE = 10;

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
} as const;

function isLoopback(address: string): boolean {
  return (
    address === 'localhost' ||
    address === '::1' ||
    address.startsWith('127.') ||
    address === '::ffff:127.0.0.1'
  );
}

export interface AdminServer {
  readonly server: Server;
  readonly url: string;
  readonly metrics: GatewayMetrics;
  close(): Promise<void>;
}

/**
 * The gateway's admin listener, apart from the traffic it routes: liveness and readiness
 * (`application/health+json`), Prometheus `/metrics`, and with a bearer token `/admin/upstreams` (every target's
 * standing), `/admin/config` and `POST /admin/reload` (the config file again). Wrong tokens are rate-limited per
 * client; every answer carries no-store and a CSP that allows nothing.
 */
export async function startAdmin(
  gateway: Gateway,
  watcher: ConfigWatcher | undefined,
  options: AdminOptions,
): Promise<AdminServer> {
  const host = options.host ?? '127.0.0.1';
  const token = options.token;
  if (token !== undefined && token.length < MIN_TOKEN_LENGTH)
    throw new InvalidOptionsError('admin.token', `expected at least ${MIN_TOKEN_LENGTH} characters`);
  if (token === undefined && !isLoopback(host))
    throw new InvalidOptionsError('admin.token', `a token is required for an admin listener on ${host}`);
  // prom-client is an optional peer: loaded only by the admin listener, so the rest of the package runs without it.
  const { collectGatewayMetrics } = await import('./metrics.js');
  const metrics = collectGatewayMetrics(gateway);
  const failures = new Lockout('gateway-admin-failed-tokens', FAILED_TOKENS_PER_MINUTE);

  const send = (response: ServerResponse, status: number, body: unknown, type = 'application/json') => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    response.writeHead(status, {
      ...SECURITY_HEADERS,
      'content-type': type,
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  };

  /** Whether the request may go on; answers 401 or 429 itself when not. */
  const authorised = (request: IncomingMessage, response: ServerResponse): boolean => {
    const client = request.socket.remoteAddress ?? '';
    if (token === undefined) {
      send(response, 404, { error: 'not found' });
      return false;
    }
    if (failures.locked(client)) {
      send(response, 429, { error: 'too many wrong tokens; try again later' });
      return false;
    }
    const given = Buffer.from(/^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '');
    const expected = Buffer.from(token);
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
    failures.failed(client);
    response.setHeader('www-authenticate', 'Bearer');
    send(response, 401, { error: 'a valid bearer token is required' });
    return false;
  };

  const server = createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (request, response) => {
    void handle(request, response).catch(() => {
      if (!response.headersSent) send(response, 500, { error: 'internal error' });
      else response.destroy();
    });
  });

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? '').split('?')[0];
    const method = request.method ?? 'GET';
    if (path === '/health/live' && method === 'GET') {
      send(response, 200, { status: 'pass' }, 'application/health+json');
      return;
    }
    if (path === '/health/ready' && method === 'GET') {
      const empty = [...gateway.upstreams].filter(([, pool]) => !pool.targets.some((t) => t.available()));
      const status = gateway.closed ? 'fail' : empty.length > 0 ? 'warn' : 'pass';
      const body = {
        status,
        version: String(gateway.version),
        ...(empty.length > 0
          ? { notes: empty.map(([name]) => `no target of upstream "${name}" is available`) }
          : {}),
      };
      send(response, status === 'fail' ? 503 : 200, body, 'application/health+json');
      return;
    }
    if (path === '/metrics' && method === 'GET') {
      const client = request.socket.remoteAddress ?? '';
      if (token === undefined ? !isLoopback(client) : !authorised(request, response)) {
        if (!response.headersSent)
          send(response, 403, { error: 'metrics are served to loopback clients only' });
        return;
      }
      send(response, 200, await metrics.registry.metrics(), metrics.registry.contentType);
      return;
    }
    if (!path?.startsWith('/admin/')) {
      send(response, 404, { error: 'not found' });
      return;
    }
    if (!authorised(request, response)) return;
    if (path === '/admin/upstreams' && method === 'GET') {
      send(response, 200, upstreamsOf(gateway));
    } else if (path === '/admin/config' && method === 'GET') {
      send(response, 200, { version: gateway.version, config: gateway.config });
    } else if (path === '/admin/reload' && method === 'POST') {
      if (watcher === undefined) {
        send(response, 409, { error: 'the gateway does not run from a config file' });
        return;
      }
      const applied = await watcher.reload();
      send(response, applied ? 200 : 422, { applied, version: gateway.version });
    } else {
      send(response, 405, { error: 'method or path not allowed' });
    }
  };

  const url = await listen(server, options.port ?? 0, host);
  return {
    server,
    url,
    metrics,
    async close() {
      metrics.stop();
      await stopListening(server);
    },
  };
}

/** Every upstream's targets and their standing now. */
function upstreamsOf(gateway: Gateway) {
  const now = gateway.clock.monotonic();
  return Object.fromEntries(
    [...gateway.upstreams].map(([name, pool]) => [
      name,
      pool.targets.map((target) => ({
        target: target.id,
        weight: target.weight,
        available: target.available(),
        healthy: target.healthy,
        ejectedForMs: target.ejectedUntil > now ? Math.ceil(target.ejectedUntil - now) : 0,
        ejections: target.ejections,
        consecutiveFailures: target.consecutiveFailures,
        inflight: target.inflight,
      })),
    ]),
  );
}
