import type { ReceivedMessage } from './received-message.js';

/**
 * A held message. Its abort signal is created only if the handler reads it: most handlers never do, and an
 * AbortController per message is a measurable share of a no-op handler's cost.
 */
export class Job {
  readonly message: ReceivedMessage<unknown>;
  readonly receivedAt: number;
  running = false;
  /** The next message of its session batch, run after this one in the same slot. */
  next: Job | undefined;
  #controller: AbortController | undefined;
  #abortReason: unknown;
  #aborted = false;

  constructor(message: ReceivedMessage<unknown>, receivedAt: number) {
    this.message = message;
    this.receivedAt = receivedAt;
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}
