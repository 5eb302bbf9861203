import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';

export interface UpstreamHead {
  readonly status: number;
  /** Header names and values in turn, as the upstream sent them. */
  readonly rawHeaders: readonly Buffer[];
}

/**
 * One attempt at an upstream, as an undici dispatch handler: `head` resolves at the response headers (rejects if
 * none come), with the body held back until the gateway either streams it to the client, with backpressure both
 * ways, or drops it (an answer it will retry). `done` is called once, when the exchange ends either way.
 */
export class Exchange implements Dispatcher.DispatchHandlers {
  readonly head: Promise<UpstreamHead>;
  #resolve!: (head: UpstreamHead) => void;
  #reject!: (error: Error) => void;
  #resume: (() => void) | undefined;
  #abort: ((error?: Error) => void) | undefined;
  #sink: ServerResponse | undefined;
  #headed = false;
  #aborted: Error | undefined;
  #ended = false;

  constructor(readonly done: (error?: Error) => void) {
    this.head = new Promise<UpstreamHead>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  onConnect(abort: (error?: Error) => void): void {
    this.#abort = abort;
    if (this.#aborted !== undefined) abort(this.#aborted);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx interim answers (100 Continue, 103 Early Hints) are not the response.
    if (statusCode < 200) return true;
    if (this.#headed) return false;
    this.#headed = true;
    this.#resume = resume;
    this.#resolve({ status: statusCode, rawHeaders });
    // Paused until the gateway decides what to do with the body.
    return false;
  }

  onData(chunk: Buffer): boolean {
    const sink = this.#sink;
    return sink === undefined ? true : sink.write(chunk);
  }

  onComplete(): void {
    this.#sink?.end();
    this.#end();
  }

  onError(error: Error): void {
    if (!this.#headed) {
      this.#headed = true;
      this.#reject(error);
    }
    // A body cut short: the client must not take a truncated body for a whole one.
    else this.#sink?.destroy(error);
    this.#end(error);
  }

  /** Streams the body into the client's response (whose head the gateway has written). */
  pipe(response: ServerResponse): void {
    this.#sink = response;
    response.on('drain', () => this.#resume?.());
    this.#resume?.();
  }

  /** Reads the body to its end and drops it, keeping the connection for the next request. */
  discard(): void {
    this.#resume?.();
  }

  /** Gives up on the exchange (the client went away): the upstream connection is closed. */
  abort(error: Error): void {
    if (this.#ended) return;
    this.#aborted = error;
    // The head fails now, even for a request still queued for a connection (undici aborts it once it has one).
    if (!this.#headed) {
      this.#headed = true;
      this.#reject(error);
    }
    this.#abort?.(error);
  }

  #end(error?: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    this.done(error);
  }
}
