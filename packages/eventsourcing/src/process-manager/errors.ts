import { StratusError } from '@stratus/core';

/** A process definition's `handle` returned something the manager cannot record (bad command, timeout or state). */
export class InvalidProcessOutcomeError extends StratusError {
  readonly processName: string;
  readonly processId: string;
  constructor(processName: string, processId: string, reason: string) {
    super(
      'ERR_STRATUS_INVALID_PROCESS_OUTCOME',
      `Process "${processName}" (${processId}) returned an invalid outcome: ${reason}`,
    );
    this.processName = processName;
    this.processId = processId;
  }
}

/**
 * Sending a process's recorded commands (or scheduling its timeouts) failed. Its state is stored and the unsent
 * messages stay pending: they are sent the next time the process loads (redeliver the event, or call flush).
 */
export class ProcessDispatchError extends StratusError {
  readonly processName: string;
  readonly processId: string;
  /** Messages still pending after this attempt. */
  readonly pending: number;
  constructor(processName: string, processId: string, pending: number, cause: unknown) {
    super(
      'ERR_STRATUS_PROCESS_DISPATCH_FAILED',
      `Process "${processName}" (${processId}): ${pending} recorded message(s) could not be sent yet: ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
    this.processName = processName;
    this.processId = processId;
    this.pending = pending;
  }
}

/** A timeout (or another message) named a process manager the router does not have. */
export class UnknownProcessManagerError extends StratusError {
  readonly processName: string;
  constructor(processName: string) {
    super('ERR_STRATUS_UNKNOWN_PROCESS_MANAGER', `No process manager named ${JSON.stringify(processName)}`);
    this.processName = processName;
  }
}
