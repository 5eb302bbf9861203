/**
 * How fuzzed requests are made: of parts (the path, the query string, the URL's shape, headers, the body), each as
 * it is when right and as it is when it is the fault; right but for one part mostly, so that a fault is met past the
 * checks of the other parts (a malformed body with a good token on an id that exists), sometimes right in every
 * part, sometimes wrong in several.
 */
import fc from 'fast-check';
import type { FuzzRequest } from './fuzz-request.js';

/** A part of a request, as sent when it is right and when it is the fault (none: it cannot be wrong here). */
export interface Part<T> {
  readonly good: fc.Arbitrary<T>;
  readonly bad?: fc.Arbitrary<T>;
}

/** A part that is not there (no body on a GET, no token where none is asked for). */
export const absent: Part<undefined> = { good: fc.constant(undefined) };

/** Records of parts, each good but for the faulty ones: mostly one, sometimes none, sometimes several. */
export function withFaults<T extends object>(
  parts: { readonly [K in keyof T]: Part<T[K]> },
): fc.Arbitrary<T> {
  const names = Object.keys(parts) as (keyof T & string)[];
  const faultable = names.filter((name) => parts[name].bad !== undefined);
  const faults = fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([]) },
    { weight: 6, arbitrary: fc.constantFrom(...faultable).map((name) => [name]) },
    { weight: 1, arbitrary: fc.subarray(faultable) },
  );
  return faults.chain((faulty) => {
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const name of names) {
      const { good, bad } = parts[name];
      record[name] = faulty.includes(name) && bad !== undefined ? bad : good;
    }
    return fc.record(record) as unknown as fc.Arbitrary<T>;
  });
}

/** What a request is made of, each part as withFaults chose it. */
export interface RequestParts {
  readonly path: string;
  readonly query: string;
  /** shapePart's. */
  readonly shape: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly authorization?: string | undefined;
  /** Sent with a body only. */
  readonly contentType?: string | undefined;
  readonly body?: string | undefined;
}

/** The request of these parts; a header left out (undefined) is not sent. */
export function requestOf(method: string, parts: RequestParts): FuzzRequest {
  const { path, query, shape, body } = parts;
  const headers: Record<string, string | undefined> = {
    ...parts.headers,
    authorization: parts.authorization,
    ...(body === undefined ? {} : { 'content-type': parts.contentType }),
  };
  return {
    method,
    // '//' doubles the first slash.
    url: shape === '//' ? `/${path}${query}` : `${path}${shape}${query}`,
    headers: Object.fromEntries(
      Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined),
    ),
    ...(body === undefined ? {} : { payload: body }),
  };
}
