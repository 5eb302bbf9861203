/**
 * A request that found the database out of reach for a moment: PostgreSQL restarting or failing over, its
 * connections cut, nothing listening yet. The request was fine and may well succeed a moment later, so the API and
 * the sites answer 503 with `Retry-After` and this message, not a 500 (which would say the app is at fault).
 */
import { transientNetworkCodes } from '@stratus/resilience';

export const UNAVAILABLE_MESSAGE = 'The service is briefly unavailable; please try again in a moment.';
/** The `Retry-After` of those answers: a restart or a fail-over takes seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

/** What the app says when a part it needs (the payment webhook, through it the database) answered 503. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
  constructor(message = UNAVAILABLE_MESSAGE) {
    super(message);
  }
}

/**
 * PostgreSQL's SQLSTATEs for a server that is going away or not there yet: connection exceptions (08000, 08001,
 * 08003, 08004, 08006) and operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot connect
 * now, e.g. while starting up).
 */
const UNAVAILABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
]);

/** pg's own errors for a connection lost under a query (they carry no code). */
const CONNECTION_LOST =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|Client has encountered a connection error and is not queryable)$/;

/** Whether `error` (or what caused it) says the database could not be reached, rather than refused the request. */
export function isBackendUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; typeof e === 'object' && e !== null && depth < 4; depth++) {
    if (e instanceof BackendUnavailableError) return true;
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === 'string' && (transientNetworkCodes.has(code) || UNAVAILABLE_SQLSTATES.has(code)))
      return true;
    if (typeof message === 'string' && CONNECTION_LOST.test(message)) return true;
    e = cause;
  }
  return false;
}
