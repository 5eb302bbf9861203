/**
 * The demo's flaky HTTP upstream on loopback: each request draws its answer (a status, a delay, a Retry-After)
 * from the current behaviour, which the demo switches phase by phase. It lives here rather than in the test kit
 * so that the CLI runs no test code.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One answer: `status` after `delayMs`, with `Retry-After: retryAfterS` when given. */
export interface Answer {
  readonly status: number;
  readonly delayMs?: number;
  readonly retryAfterS?: number;
}

/** Draws the answer to each request. */
export type Behaviour = () => Answer;

/** Answers drawn at random in proportion to their weights. */
export function weighted(
  choices: readonly (readonly [weight: number, answer: Answer])[],
  random: () => number = Math.random,
): Behaviour {
  const total = choices.reduce((sum, [weight]) => sum + weight, 0);
  return () => {
    let draw = random() * total;
    for (const [weight, answer] of choices) {
      draw -= weight;
      if (draw < 0) return answer;
    }
    return choices[choices.length - 1]![1];
  };
}

export interface FaultyUpstream {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Requests received so far. */
  readonly requests: number;
  /** Answers the next requests the new way. */
  setBehaviour(behaviour: Behaviour): void;
  /** Stops listening and drops every connection, delayed answers included. */
  close(): Promise<void>;
}

/** Starts the upstream on 127.0.0.1 (a free port). */
export async function startFaultyUpstream(behaviour: Behaviour): Promise<FaultyUpstream> {
  let current = behaviour;
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    requests++;
    const answer = current();
    const send = () => {
      const headers = answer.retryAfterS === undefined ? {} : { 'retry-after': String(answer.retryAfterS) };
      res.writeHead(answer.status, headers).end();
    };
    if (!answer.delayMs) return send();
    const timer = setTimeout(send, answer.delayMs);
    res.once('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1' }, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    setBehaviour(next) {
      current = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
