import { constants } from 'node:os';
import { assertDuration, InvalidOptionsError, StratusError } from '@stratus/core';

/** Anything with a graceful close bounded by a deadline: a Consumer, Messaging, an OutboxRelay... */
export interface Closable {
  close(options?: { timeoutMs?: number }): Promise<void>;
}

export interface ShutdownOutcome {
  /** The signal that started the shutdown. */
  readonly signal: NodeJS.Signals;
  /** The first error a close threw, or the shutdown's hard-stop error; undefined when everything closed. */
  readonly error: unknown;
}

export interface CloseOnSignalsOptions {
  /** Default SIGTERM (what orchestrators send) and SIGINT (Ctrl-C). */
  signals?: readonly NodeJS.Signals[];
  /**
   * The deadline, shared by all closables in turn: consumers finish their running handlers within it, then
   * abort the rest and give their messages back. Default 30 s (Kubernetes' default grace period).
   */
  timeoutMs?: number;
  /**
   * Exit once closed: code 0, or 1 when a close failed or the whole shutdown outlasted `timeoutMs` by more than
   * `hardStopAfterMs`. Default true.
   */
  exit?: boolean;
  /** How long past `timeoutMs` closing may take before the process exits anyway; default 5 s. */
  hardStopAfterMs?: number;
  /** Called once everything is closed (or the hard stop came), before the exit. */
  onClosed?: (outcome: ShutdownOutcome) => void | Promise<void>;
}

/** The shutdown outlasted its deadline plus `hardStopAfterMs`: something's close hung. */
export class ShutdownTimeoutError extends StratusError {
  constructor(limitMs: number) {
    super('ERR_STRATUS_SHUTDOWN_TIMEOUT', `Closing took over ${limitMs} ms`);
  }
}

/**
 * Graceful shutdown on SIGTERM/SIGINT: the first signal closes `closables` one after the other (in the order given,
 * so consumers before the backend they use), within `timeoutMs` all told, then exits. A second signal exits at once
 * with the shell's code for it (130 for SIGINT, 143 for SIGTERM). Returns a function that removes the handlers.
 */
export function closeOnSignals(
  closables: readonly Closable[],
  options: CloseOnSignalsOptions = {},
): () => void {
  if (!Array.isArray(closables) || closables.some((c) => typeof c?.close !== 'function')) {
    throw new InvalidOptionsError('closables', 'expected an array of objects with a close() method');
  }
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  if (!Array.isArray(signals) || signals.length === 0 || signals.some((s) => !(s in constants.signals))) {
    throw new InvalidOptionsError('signals', 'expected a non-empty array of signal names');
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  assertDuration('timeoutMs', timeoutMs);
  const hardStopAfterMs = options.hardStopAfterMs ?? 5_000;
  assertDuration('hardStopAfterMs', hardStopAfterMs);
  const exit = options.exit ?? true;

  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) {
      process.exit(128 + (constants.signals[signal] ?? 0));
    }
    shuttingDown = true;
    void shutdown(signal);
  };

  async function shutdown(signal: NodeJS.Signals): Promise<void> {
    const started = performance.now();
    let hardStop: NodeJS.Timeout | undefined;
    const stalled = new Promise<unknown>((resolve) => {
      hardStop = setTimeout(
        () => resolve(new ShutdownTimeoutError(timeoutMs + hardStopAfterMs)),
        timeoutMs + hardStopAfterMs,
      );
      hardStop.unref();
    });
    const closeAll = async (): Promise<unknown> => {
      let firstError: unknown;
      for (const closable of closables) {
        const remainingMs = Math.max(0, Math.round(timeoutMs - (performance.now() - started)));
        try {
          await closable.close({ timeoutMs: remainingMs });
        } catch (error) {
          firstError ??= error;
        }
      }
      return firstError;
    };
    let error = await Promise.race([closeAll(), stalled]);
    clearTimeout(hardStop);
    try {
      await options.onClosed?.({ signal, error });
    } catch (callbackError) {
      if (!exit) throw callbackError;
      error ??= callbackError;
    }
    if (exit) process.exit(error === undefined ? 0 : 1);
  }

  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.removeListener(signal, onSignal);
  };
}
