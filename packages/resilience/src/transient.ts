import { OperationCancelledError } from '@stratus/core';
import { BrokenCircuitError, BulkheadRejectedError, TimeoutError } from './errors.js';

/** HTTP statuses worth retrying: they describe a temporary condition of the server or the path to it. */
export const transientHttpStatuses: ReadonlySet<number> = new Set([408, 429, 500, 502, 503, 504]);

/** Node's codes for network errors that a later attempt can plausibly get past. */
export const transientNetworkCodes: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** The HTTP status an error or response carries (`status`, `statusCode` or `response.status`), if any. */
export function httpStatusOf(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { status?: unknown; statusCode?: unknown; response?: { status?: unknown } };
  const status = v.status ?? v.statusCode ?? v.response?.status;
  return typeof status === 'number' ? status : undefined;
}

function errorCodeOf(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; typeof e === 'object' && e !== null && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && transientNetworkCodes.has(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The default transient-fault classifier for errors: network errors, timeouts and HTTP 408/429/500/502/503/504.
 * Never 4xx client errors, never cancellations, never a broken circuit or a bulkhead rejection.
 */
export function isTransientError(error: unknown): boolean {
  if (error instanceof OperationCancelledError) return false;
  if (error instanceof BrokenCircuitError || error instanceof BulkheadRejectedError) return false;
  if (error instanceof TimeoutError) return true;
  const status = httpStatusOf(error);
  if (status !== undefined) return transientHttpStatuses.has(status);
  if (errorCodeOf(error) !== undefined) return true;
  // fetch() reports network failures as a TypeError whose cause carries the socket error code.
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'ConnectTimeoutError');
}

/** The default classifier for results: a response-like value with a transient HTTP status. */
export function isTransientResult(value: unknown): boolean {
  const status = httpStatusOf(value);
  return status !== undefined && transientHttpStatuses.has(status);
}

function headerOf(value: unknown, name: string): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { headers?: unknown; response?: { headers?: unknown } };
  const headers = v.headers ?? v.response?.headers;
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  }
  const raw =
    (headers as Record<string, unknown>)[name] ?? (headers as Record<string, unknown>)[name.toLowerCase()];
  if (Array.isArray(raw)) return typeof raw[0] === 'string' ? raw[0] : undefined;
  return typeof raw === 'string' ? raw : typeof raw === 'number' ? String(raw) : undefined;
}

/**
 * Milliseconds a server asked us to wait, from a Retry-After header (delta-seconds or an HTTP date) on an
 * error or a response, or a `retryAfterMs` property. Undefined when absent or unparseable; never negative.
 */
export function retryAfterMs(value: unknown, now: number): number | undefined {
  if (typeof value === 'object' && value !== null) {
    const direct = (value as { retryAfterMs?: unknown }).retryAfterMs;
    if (typeof direct === 'number' && Number.isFinite(direct)) return Math.max(0, direct);
  }
  const header = headerOf(value, 'Retry-After') ?? headerOf(value, 'retry-after');
  if (header === undefined) return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
