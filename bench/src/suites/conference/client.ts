/**
 * A small JSON client for the conference API over keep-alive HTTP/1.1 (node:http with a keep-alive Agent: no
 * dependency, and less CPU per request than fetch). Every request is bounded by a timeout; nothing here retries.
 */
import { Agent, request } from 'node:http';

export interface Answer {
  readonly status: number;
  /** The parsed JSON body, or undefined when there is none. */
  readonly body: unknown;
}

/** A request that ran out of time (the registration's deadline, or the setup's bound). */
export class RequestTimeoutError extends Error {
  constructor(method: string, path: string, ms: number) {
    super(`${method} ${path}: no answer within ${Math.round(ms)} ms`);
    this.name = 'RequestTimeoutError';
  }
}

/** An answer a step did not expect; the message is the status, with the body below 500. */
export class UnexpectedAnswerError extends Error {
  readonly answer: Answer;
  constructor(answer: Answer) {
    super(`HTTP ${answer.status}${answer.status >= 500 ? '' : ` ${JSON.stringify(answer.body)}`}`);
    this.name = 'UnexpectedAnswerError';
    this.answer = answer;
  }
}

export interface ApiClientOptions {
  readonly host: string;
  readonly port: number;
  /** Open connections at most (requests beyond it queue in the agent). */
  readonly maxSockets: number;
}

export class ApiClient {
  readonly host: string;
  readonly port: number;
  readonly #agent: Agent;

  constructor(options: ApiClientOptions) {
    this.host = options.host;
    this.port = options.port;
    this.#agent = new Agent({
      keepAlive: true,
      maxSockets: options.maxSockets,
      maxFreeSockets: options.maxSockets,
      // The most recently used (warm) connection first.
      scheduling: 'lifo',
    });
  }

  /** Sends `body` as JSON when given; answers with the status and the JSON body, whatever the status. */
  send(
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    options: { body?: unknown; token?: string; timeoutMs: number },
  ): Promise<Answer> {
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string | number> = { accept: 'application/json' };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    return new Promise<Answer>((resolve, reject) => {
      const req = request(
        { host: this.host, port: this.port, method, path, headers, agent: this.#agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            let body: unknown;
            if (text.length > 0 && /json/.test(res.headers['content-type'] ?? '')) {
              try {
                body = JSON.parse(text);
              } catch {
                body = text;
              }
            }
            resolve({ status: res.statusCode ?? 0, body });
          });
        },
      );
      const timer = setTimeout(
        () => req.destroy(new RequestTimeoutError(method, path, options.timeoutMs)),
        Math.max(1, options.timeoutMs),
      );
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.end(payload);
    });
  }

  /** Closes the idle connections (and those that become idle). */
  close(): void {
    this.#agent.destroy();
  }
}

/** A short label of a failure, to count failures by kind. */
export function failureLabel(step: string, failure: unknown): string {
  if (failure instanceof RequestTimeoutError) return `${step}: timeout`;
  if (failure instanceof Error) {
    const code = (failure as { code?: unknown }).code;
    return `${step}: ${typeof code === 'string' ? code : failure.message.split('\n')[0]}`;
  }
  return `${step}: ${String(failure)}`;
}
