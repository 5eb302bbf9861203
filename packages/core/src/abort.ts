import type { Clock } from './clock.js';
import { OperationCancelledError } from './errors.js';

/** A signal that never aborts; shared so the happy path allocates nothing. */
export const neverAbortedSignal: AbortSignal = new AbortController().signal;

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new OperationCancelledError(signal.reason);
}

/**
 * Waits `ms` on `clock`. Rejects with OperationCancelledError the moment `signal` aborts, and clears the
 * timer so nothing leaks.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new OperationCancelledError(signal.reason));
  return new Promise<void>((resolve, reject) => {
    if (!signal) {
      clock.setTimeout(resolve, ms);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(new OperationCancelledError(signal.reason));
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A child AbortController that aborts when `parent` does. `dispose` detaches it from the parent so
 * long-lived parents do not accumulate listeners.
 */
export function linkedAbortController(parent: AbortSignal | undefined): {
  controller: AbortController;
  dispose: () => void;
} {
  const controller = new AbortController();
  if (!parent) return { controller, dispose: noop };
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { controller, dispose: noop };
  }
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onAbort, { once: true });
  return { controller, dispose: () => parent.removeEventListener('abort', onAbort) };
}

function noop(): void {}
