/** A request as the fuzzer sends it (Fastify's `inject` takes it as it is), and how a report shows one. */

export interface FuzzRequest {
  readonly method: string;
  /** Path and query, encoded as they go on the wire (or not, when that is the point). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload?: string;
}

/** Text longer than this is shown cut, with its length. */
const SHOWN = 300;

const shown = (text: string) =>
  text.length <= SHOWN ? text : `${text.slice(0, SHOWN)}… (${text.length} characters)`;

/** The request on one line, with every control character and lone surrogate escaped (JSON string syntax). */
export function describeRequest(request: FuzzRequest): string {
  const headers = Object.entries(request.headers).map(
    ([name, value]) => `${name}: ${JSON.stringify(shown(value))}`,
  );
  const payload = request.payload === undefined ? '' : ` body ${JSON.stringify(shown(request.payload))}`;
  return `${request.method} ${JSON.stringify(shown(request.url))} [${headers.join(', ')}]${payload}`;
}
