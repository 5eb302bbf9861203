/** Base class of every error Stratus throws on purpose; `code` is stable and safe to switch on. */
export class StratusError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Options given to a constructor or factory were invalid. `option` names the offending path. */
export class InvalidOptionsError extends StratusError {
  readonly option: string;
  constructor(option: string, message: string) {
    super('ERR_STRATUS_INVALID_OPTIONS', `Invalid option "${option}": ${message}`);
    this.option = option;
  }
}

/** The caller's AbortSignal fired. `reason` is the signal's reason. */
export class OperationCancelledError extends StratusError {
  readonly reason: unknown;
  constructor(reason?: unknown) {
    super('ERR_STRATUS_CANCELLED', 'The operation was cancelled', { cause: reason });
    this.reason = reason;
  }
}

export function isStratusError(error: unknown, code?: string): error is StratusError {
  return error instanceof StratusError && (code === undefined || error.code === code);
}
