/**
 * Fault injection: a loopback HTTP upstream and an async function that misbehave on a script (see script.ts),
 * changeable at run time. Errors look like the real ones (HTTP errors with `status` and `headers` including
 * Retry-After, Node network errors with `code`, `errno` and `syscall`) so classifiers see what production sees.
 */
import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { constants } from 'node:os';
import { type Clock, InvalidOptionsError, systemClock, type TimerHandle } from '@stratus/core';
import { Counter, compileScript, type Script, type StepPicker } from './script.js';

const DEFAULT_WAIT_MS = 5_000;

/** Retry-After as delta-seconds (number), an absolute time (Date, sent as an HTTP date) or a raw header value. */
export type RetryAfter = number | Date | string;

function retryAfterHeader(value: RetryAfter): string {
  if (value instanceof Date) return value.toUTCString();
  return String(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Realistic errors

/** An HTTP error as client libraries throw them: `status` (and `statusCode`), lower-case `headers`. */
export class HttpError extends Error {
  override name = 'HttpError';
  readonly status: number;
  readonly statusCode: number;
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    status: number,
    options: { retryAfter?: RetryAfter; headers?: Record<string, string>; message?: string } = {},
  ) {
    super(options.message ?? `Request failed with status ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd());
    this.status = status;
    this.statusCode = status;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
    if (options.retryAfter !== undefined) headers['retry-after'] = retryAfterHeader(options.retryAfter);
    this.headers = headers;
  }
}

export function httpError(
  status: number,
  options?: { retryAfter?: RetryAfter; headers?: Record<string, string>; message?: string },
): HttpError {
  return new HttpError(status, options);
}

export interface NetworkError extends Error {
  readonly code: string;
  readonly errno: number;
  readonly syscall: string;
}

/** An error shaped like Node's socket errors, e.g. `read ECONNRESET` with code, errno and syscall. */
export function networkError(code = 'ECONNRESET', syscall = 'read'): NetworkError {
  const errno = (constants.errno as Record<string, number | undefined>)[code];
  return Object.assign(new Error(`${syscall} ${code}`), {
    code,
    errno: errno === undefined ? 0 : -errno,
    syscall,
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

// ---------------------------------------------------------------------------------------------------------------
// Faulty HTTP upstream

export type ReplyStep =
  | {
      readonly kind: 'respond';
      readonly status: number;
      /** A string or bytes as is; anything else as JSON. Default: `{ status, message }`. */
      readonly body?: unknown;
      readonly headers?: Readonly<Record<string, string>>;
      readonly retryAfter?: RetryAfter;
      /** Wait this long (on the upstream's clock) before answering. */
      readonly delayMs?: number;
    }
  /** Accept the request and never answer (until the client gives up or the upstream closes). */
  | { readonly kind: 'stall' }
  /** Reset the TCP connection (the client sees ECONNRESET), after `delayMs` if given. */
  | { readonly kind: 'reset'; readonly delayMs?: number };

type RespondInit = { headers?: Record<string, string>; retryAfter?: RetryAfter; delayMs?: number };

/** Step constructors for `startFaultyUpstream` scripts. */
export const reply = {
  ok: (body?: unknown, init: RespondInit = {}): ReplyStep => ({
    kind: 'respond',
    status: 200,
    body,
    ...init,
  }),
  status: (status: number, init: RespondInit & { body?: unknown } = {}): ReplyStep => ({
    kind: 'respond',
    status,
    ...init,
  }),
  error: (status = 500, init: RespondInit & { body?: unknown } = {}): ReplyStep => ({
    kind: 'respond',
    status,
    ...init,
  }),
  unavailable: (retryAfter?: RetryAfter): ReplyStep => ({ kind: 'respond', status: 503, retryAfter }),
  tooManyRequests: (retryAfter?: RetryAfter): ReplyStep => ({ kind: 'respond', status: 429, retryAfter }),
  stall: (): ReplyStep => ({ kind: 'stall' }),
  reset: (delayMs?: number): ReplyStep => ({ kind: 'reset', delayMs }),
  /** `step` (default 200 OK) answered after `delayMs`. */
  slow: (delayMs: number, step: ReplyStep = { kind: 'respond', status: 200 }): ReplyStep => {
    if (step.kind === 'stall') return step;
    return { ...step, delayMs };
  },
};

function isReplyStep(value: unknown): value is ReplyStep {
  const kind = (value as { kind?: unknown } | null)?.kind;
  return kind === 'respond' || kind === 'stall' || kind === 'reset';
}

/** What a script function sees about each request. */
export interface UpstreamRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
}

export type UpstreamScript = Script<ReplyStep, UpstreamRequest>;

export interface FaultyUpstreamOptions {
  /** Default: 200 OK forever. */
  script?: UpstreamScript;
  /** Clock for `delayMs` (inject a VirtualClock to control slow replies). Default: the system clock. */
  clock?: Clock;
}

export interface FaultyUpstream {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Requests received so far. */
  readonly requests: number;
  /** Requests per outcome: the status code ('200', '503', ...), 'stall' or 'reset'. */
  readonly counts: Readonly<Record<string, number>>;
  /** Requests being stalled or delayed right now. */
  readonly pending: number;
  /** Replaces the script; it starts over with the next request. */
  setScript(script: UpstreamScript): void;
  /** Resolves once `n` requests have arrived in total (the step for the n-th has been started). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Stops listening and drops every open connection (stalled requests see a reset). */
  close(): Promise<void>;
}

/** Starts an HTTP server on 127.0.0.1 (free port) whose replies follow a script. */
export async function startFaultyUpstream(options: FaultyUpstreamOptions = {}): Promise<FaultyUpstream> {
  const clock = options.clock ?? systemClock;
  const okForever: StepPicker<ReplyStep, UpstreamRequest> = () => reply.ok();
  const compile = (script: UpstreamScript) => compileScript(script, isReplyStep, okForever);
  let pick = compile(options.script ?? reply.ok());
  let scriptStart = 0;
  const counter = new Counter();
  const pending = new Set<{ cancel: () => void }>();
  const sockets = new Set<Socket>();

  const answer = (res: ServerResponse, step: Extract<ReplyStep, { kind: 'respond' }>) => {
    const headers: Record<string, string> = { ...step.headers };
    if (step.retryAfter !== undefined) headers['retry-after'] = retryAfterHeader(step.retryAfter);
    let body = step.body ?? { status: step.status, message: STATUS_CODES[step.status] ?? 'Unknown' };
    if (typeof body !== 'string' && !(body instanceof Uint8Array)) {
      body = JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    res.writeHead(step.status, headers).end(body);
  };

  const perform = (req: IncomingMessage, res: ServerResponse, step: ReplyStep) => {
    if (step.kind === 'respond') answer(res, step);
    else if (step.kind === 'reset') req.socket.resetAndDestroy();
  };

  const server = createServer((req, res) => {
    req.resume();
    const index = counter.increment();
    let step: ReplyStep;
    try {
      step = pick({
        index: index - scriptStart,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
      });
    } catch (error) {
      step = reply.error(500, { body: { error: `upstream script failed: ${String(error)}` } });
    }
    counter.count(step.kind === 'respond' ? String(step.status) : step.kind);
    const delayMs = step.kind === 'stall' ? undefined : step.delayMs;
    if (step.kind !== 'stall' && !delayMs) {
      perform(req, res, step);
      return;
    }
    // Stalled or delayed: remember it so a client hang-up or close() releases the timer.
    let timer: TimerHandle | undefined;
    const entry = {
      cancel: () => {
        if (timer !== undefined) clock.clearTimeout(timer);
        pending.delete(entry);
      },
    };
    pending.add(entry);
    res.once('close', entry.cancel);
    if (delayMs) {
      timer = clock.setTimeout(() => {
        timer = undefined;
        entry.cancel();
        if (!res.destroyed) perform(req, res, step);
      }, delayMs);
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get requests() {
      return counter.total;
    },
    get counts() {
      return counter.byKind;
    },
    get pending() {
      return pending.size;
    },
    setScript(script) {
      pick = compile(script);
      scriptStart = counter.total;
    },
    waitForRequests(n, timeoutMs = DEFAULT_WAIT_MS) {
      return counter.waitFor(n, timeoutMs, 'requests');
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const entry of [...pending]) entry.cancel();
        server.close(() => resolve());
        for (const socket of sockets) socket.resetAndDestroy();
      });
      return closing;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Faulty async function

export type CallStep<T> =
  | { readonly kind: 'return'; readonly value: T; readonly delayMs?: number }
  | { readonly kind: 'throw'; readonly error: unknown; readonly delayMs?: number }
  /** Never settle until the call's AbortSignal fires (then reject with its reason, as fetch does). */
  | { readonly kind: 'stall' }
  /** Call the wrapped target function. */
  | { readonly kind: 'pass'; readonly delayMs?: number };

/** Step constructors for `faultyFunction` scripts. */
export const call = {
  returns: <T>(value: T, delayMs?: number): CallStep<T> => ({ kind: 'return', value, delayMs }),
  throws: (error: unknown, delayMs?: number): CallStep<never> => ({ kind: 'throw', error, delayMs }),
  /** Throws an HttpError with this status (and Retry-After). */
  failsWith: (status: number, options?: { retryAfter?: RetryAfter; headers?: Record<string, string> }) =>
    call.throws(httpError(status, options)),
  /** Throws a Node-style network error (default ECONNRESET). */
  networkError: (code = 'ECONNRESET', syscall = 'read'): CallStep<never> =>
    call.throws(networkError(code, syscall)),
  stalls: (): CallStep<never> => ({ kind: 'stall' }),
  passes: (delayMs?: number): CallStep<never> => ({ kind: 'pass', delayMs }),
  /** `step` after `delayMs`. */
  slow: <T>(delayMs: number, step: CallStep<T>): CallStep<T> =>
    step.kind === 'stall' ? step : { ...step, delayMs },
};

function isCallStep(value: unknown): value is CallStep<unknown> {
  const kind = (value as { kind?: unknown } | null)?.kind;
  return kind === 'return' || kind === 'throw' || kind === 'stall' || kind === 'pass';
}

/** What each call gets; policies pass `{ signal, attempt }`. */
export interface CallContext {
  readonly signal?: AbortSignal;
}

export type CallScript<T> = Script<CallStep<T>, CallContext>;

export interface FaultyFunction<T> {
  (context?: CallContext): Promise<T>;
  /** Calls so far. */
  readonly calls: number;
  /** Calls per outcome: 'return', 'throw', 'stall', 'pass'. */
  readonly counts: Readonly<Record<string, number>>;
  /** Calls stalled or delayed right now. */
  readonly pending: number;
  /** Replaces the script; it starts over with the next call. */
  setScript(script: CallScript<T>): void;
  waitForCalls(n: number, timeoutMs?: number): Promise<void>;
  /** Rejects every stalled or delayed call with `reason` (test clean-up for calls made without a signal). */
  abortPending(reason?: unknown): void;
}

export interface FaultyFunctionOptions<T> {
  /** Clock for delays. Default: the system clock. */
  clock?: Clock;
  /** The real function behind 'pass' steps; when given, the script's default is to pass every call through. */
  target?: (context: CallContext) => Promise<T> | T;
}

/**
 * An async function that returns, throws, stalls or delays call by call as `script` says. Without a target,
 * a sequence that runs out throws an Error saying so.
 */
export function faultyFunction<T>(
  script: CallScript<T>,
  options: FaultyFunctionOptions<T> = {},
): FaultyFunction<T> {
  const clock = options.clock ?? systemClock;
  const target = options.target;
  if (target !== undefined && typeof target !== 'function') {
    throw new InvalidOptionsError('target', 'expected a function');
  }
  const fallback: StepPicker<CallStep<T>, CallContext> = ({ index }) =>
    target
      ? call.passes()
      : call.throws(new Error(`faultyFunction: script exhausted (${index + 1} call(s) past its end)`));
  const compile = (s: CallScript<T>) =>
    compileScript(s, isCallStep, fallback) as StepPicker<CallStep<T>, CallContext>;
  let pick = compile(script);
  let scriptStart = 0;
  const counter = new Counter();
  const pending = new Set<(reason: unknown) => void>();

  const settle = (step: Exclude<CallStep<T>, { kind: 'stall' }>, context: CallContext): Promise<T> => {
    if (step.kind === 'return') return Promise.resolve(step.value);
    if (step.kind === 'throw') return Promise.reject(step.error);
    if (!target) return Promise.reject(new Error('faultyFunction: a "pass" step needs options.target'));
    return Promise.resolve().then(() => target(context));
  };

  const fn = (context: CallContext = {}): Promise<T> => {
    const index = counter.increment();
    const step = pick({ ...context, index: index - scriptStart });
    counter.count(step.kind);
    const delayMs = step.kind === 'stall' ? undefined : step.delayMs;
    if (step.kind !== 'stall' && !delayMs) return settle(step, context);
    const { signal } = context;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const finish = (reason: unknown) => {
        if (timer !== undefined) clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        pending.delete(finish);
        reject(reason);
      };
      const onAbort = () => finish(abortReason(signal as AbortSignal));
      signal?.addEventListener('abort', onAbort, { once: true });
      pending.add(finish);
      if (step.kind !== 'stall' && delayMs) {
        timer = clock.setTimeout(() => {
          timer = undefined;
          signal?.removeEventListener('abort', onAbort);
          pending.delete(finish);
          settle(step, context).then(resolve, reject);
        }, delayMs);
      }
    });
  };

  return Object.defineProperties(fn, {
    calls: { get: () => counter.total },
    counts: { get: () => counter.byKind },
    pending: { get: () => pending.size },
    setScript: {
      value: (next: CallScript<T>) => {
        pick = compile(next);
        scriptStart = counter.total;
      },
    },
    waitForCalls: {
      value: (n: number, timeoutMs = DEFAULT_WAIT_MS) => counter.waitFor(n, timeoutMs, 'calls'),
    },
    abortPending: {
      value: (reason: unknown = new Error('faultyFunction: aborted by abortPending()')) => {
        for (const finish of [...pending]) finish(reason);
      },
    },
  }) as FaultyFunction<T>;
}
