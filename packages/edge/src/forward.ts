import { type ServerResponse, STATUS_CODES } from 'node:http';
import type { Clock } from '@stratus/core';
import type { Dispatcher } from 'undici';
import { UpstreamTimeoutError } from './errors.js';
import { Exchange, type UpstreamHead } from './exchange.js';
import { clientHeaders, hasBody, upstreamHeaders } from './headers.js';
import type { RequestView } from './request-view.js';
import type { RetryBudget } from './retry-budget.js';
import type { Route } from './routes.js';
import type { Target } from './upstream-pool.js';

/** How a request ended, for the access log. */
export interface Outcome {
  readonly status: number;
  readonly attempts: number;
  readonly route?: string;
  readonly upstream?: string;
  readonly target?: string;
  readonly error?: string;
}

export interface Forwarding {
  readonly view: RequestView;
  readonly response: ServerResponse;
  readonly route: Route;
  readonly params: Record<string, string>;
  readonly requestId: string;
  readonly budget: RetryBudget;
  readonly clock: Clock;
  /** Headers the gateway adds to the answer (rate limit fields). */
  readonly extraHeaders?: Readonly<Record<string, string>>;
  /** Headers the gateway sets upstream from what it verified (claims, consumer), names and values in turn. */
  readonly verified?: { readonly owned: ReadonlySet<string>; readonly headers: readonly string[] };
  readonly done: (outcome: Outcome) => void;
}

/** Errors that mean the upstream never answered in time. */
const TIMEOUTS = new Set(['ERR_STRATUS_UPSTREAM_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Proxies one request to its route's upstream. Another attempt (on another target when there is one) follows a
 * connection failure, a timeout or a status in the route's `retry.on`, only for a request without a body (its bytes
 * have not been kept to send twice), only while the client has seen nothing, and only within the retry budget.
 */
export function forward(forwarding: Forwarding): void {
  const { view, response, route, params, requestId, budget } = forwarding;
  const request = view.request;
  const pool = route.destination(view);
  const path = route.pathFor(view, params);
  const headers = upstreamHeaders(view, requestId, forwarding.verified?.owned, forwarding.verified?.headers);
  const bodyless = !hasBody(request);
  const host = route.preserveHost ? request.headers.host : undefined;
  budget.request();
  let attempts = 0;
  let tried: Target | undefined;
  let current: Exchange | undefined;
  let clientGone = false;
  /** The outcome of an answer being streamed, logged when the response closes. */
  let streamed: Outcome | undefined;
  response.once('close', () => {
    if (!response.writableFinished) {
      clientGone = true;
      current?.abort(new Error('the client went away'));
    }
    if (streamed !== undefined) forwarding.done(streamed);
  });
  /** Another attempt: only without a body, within the route's attempts and the retry budget. */
  const mayRetry = () => bodyless && attempts < route.attempts && budget.tryRetry();
  const outcome = (status: number, target?: Target, error?: string): Outcome => ({
    status,
    attempts,
    route: route.name,
    upstream: pool.name,
    ...(target === undefined ? {} : { target: target.id }),
    ...(error === undefined ? {} : { error }),
  });

  const attempt = (): void => {
    const target = pool.pick(view, tried);
    if (target === undefined) {
      reply(response, 503, requestId, `No target of upstream "${pool.name}" is available.`);
      forwarding.done(outcome(503, undefined, 'no-target'));
      return;
    }
    attempts += 1;
    tried = target;
    target.inflight += 1;
    const exchange = new Exchange(() => {
      target.inflight -= 1;
    });
    current = exchange;
    target.dispatcher.dispatch(
      {
        origin: target.origin,
        path: target.basePath + path,
        method: view.method as Dispatcher.HttpMethod,
        headers: [...headers, 'host', host ?? target.host],
        body: bodyless ? null : request,
        // The route's timeout runs on the gateway's clock (below), so tests can drive it.
        headersTimeout: 0,
      },
      exchange,
    );
    const timer = forwarding.clock.setTimeout(
      () => exchange.abort(new UpstreamTimeoutError(pool.name, route.timeoutMs)),
      route.timeoutMs,
    );
    exchange.head.then(
      (head) => {
        forwarding.clock.clearTimeout(timer);
        answered(target, exchange, head);
      },
      (error: Error & { code?: string }) => {
        forwarding.clock.clearTimeout(timer);
        // A client that went away is no fault of the target's.
        if (clientGone) return forwarding.done(outcome(499, target, 'client-gone'));
        pool.failed(target);
        if (mayRetry()) return attempt();
        const timedOut = error.code !== undefined && TIMEOUTS.has(error.code);
        const status = timedOut ? 504 : 502;
        reply(
          response,
          status,
          requestId,
          timedOut ? `Upstream "${pool.name}" did not answer in time.` : `Upstream "${pool.name}" failed.`,
        );
        forwarding.done(outcome(status, target, timedOut ? 'upstream-timeout' : 'upstream-error'));
      },
    );
  };

  const answered = (target: Target, exchange: Exchange, head: UpstreamHead): void => {
    const status = head.status;
    if (status >= 500) pool.failed(target);
    else pool.succeeded(target);
    if (route.retryOn.has(status) && mayRetry()) {
      exchange.discard();
      attempt();
      return;
    }
    if (response.destroyed) {
      exchange.abort(new Error('the client went away'));
      forwarding.done(outcome(499, target, 'client-gone'));
      return;
    }
    const { headers, sized } = clientHeaders(head.rawHeaders, requestId);
    const extra = forwarding.extraHeaders;
    if (extra !== undefined) for (const name in extra) headers.push(name, extra[name] as string);
    response.writeHead(status, headers);
    // A body of unknown length may be a stream (server-sent events) whose first bytes come much later: its head
    // goes out now. A sized body follows at once, in the same write as its head.
    if (!sized) response.flushHeaders();
    exchange.pipe(response);
    streamed = outcome(status, target);
  };

  attempt();
}

/** An answer of the gateway's own, as RFC 9457 problem details. */
export function reply(
  response: ServerResponse,
  status: number,
  requestId: string,
  detail: string,
  headers?: Readonly<Record<string, string>>,
): void {
  if (response.headersSent || response.destroyed) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({
    type: 'about:blank',
    title: STATUS_CODES[status],
    status,
    detail,
    requestId,
  });
  response.writeHead(status, {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-request-id': requestId,
    ...headers,
  });
  response.end(body);
}
