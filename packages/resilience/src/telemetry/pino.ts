import { assertObject, InvalidOptionsError, type StratusEvent } from '@stratus/core';
import { eventFields, subscribeStratusEvents } from './event-fields.js';

export type StratusLogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

/** 'silent' drops the event. */
export type EventLogLevel = StratusLogLevel | 'silent';

/**
 * What the adapter needs of a logger: pino's shape (`logger.warn(object, message)`), which bunyan and most
 * structured loggers share. Typed structurally so pino stays an optional peer dependency.
 */
export type EventLogger = { [L in StratusLogLevel]: (object: object, message: string) => void } & {
  isLevelEnabled?(level: string): boolean;
};

/**
 * Levels by event: a map keyed by `component.type` (checked first) or `type`, or a function; whatever it does
 * not decide falls back to the default levels.
 */
export type EventLevels =
  | Readonly<Record<string, EventLogLevel>>
  | ((event: StratusEvent) => EventLogLevel | undefined);

export interface LogStratusEventsOptions {
  levels?: EventLevels;
  /** The key the event goes under in the log object; default 'stratus'. */
  key?: string;
}

export interface StratusEventLog {
  /** Stops logging. */
  dispose(): void;
}

/** Default levels by event type: what an operator should see without asking, and what floods when it goes wrong. */
const DEFAULT_LEVELS: Readonly<Record<string, EventLogLevel>> = {
  retry: 'info',
  'give-up': 'error',
  timeout: 'warn',
  fallback: 'warn',
  hedge: 'info',
  winner: 'debug',
  // One per refused call while a breaker is open or a limit is hit: debug, or they drown everything else.
  rejected: 'debug',
  limited: 'debug',
  queued: 'debug',
  dequeued: 'debug',
  failure: 'debug',
  success: 'trace',
  injected: 'debug',
  'soft-limit': 'warn',
  'soft-limit-cleared': 'info',
  'shared-state-unavailable': 'warn',
  'shared-state-restored': 'info',
  reconfigured: 'info',
  'reconfigure-failed': 'error',
  'source-failed': 'error',
};

const LEVELS: readonly EventLogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** A state change is a warning when it means calls are now refused (a breaker opening), info otherwise. */
function defaultLevel(event: StratusEvent): EventLogLevel {
  const to = (event as { to?: unknown }).to;
  if (typeof to === 'string') return to === 'open' || to === 'isolated' ? 'warn' : 'info';
  return DEFAULT_LEVELS[event.type] ?? 'info';
}

/**
 * Logs every Stratus event of the process (from the diagnostics channel, so every policy is covered without
 * wiring) as one structured line: `{ stratus: { component, name, type, at, ...fields } }` with the message
 * `<component> "<name>" <type>`. Errors in fields are rendered with type, message, code and stack.
 */
export function logStratusEvents(
  logger: EventLogger,
  options: LogStratusEventsOptions = {},
): StratusEventLog {
  assertObject('logger', logger as unknown);
  assertObject('options', options as unknown);
  const { levels, key = 'stratus' } = options;
  if (typeof levels === 'object' && levels !== null) {
    for (const [name, level] of Object.entries(levels)) {
      if (!LEVELS.includes(level)) {
        throw new InvalidOptionsError(
          `levels.${name}`,
          `expected one of ${LEVELS.join(', ')}, got ${String(level)}`,
        );
      }
    }
  } else if (levels !== undefined && typeof levels !== 'function') {
    throw new InvalidOptionsError('levels', 'expected an object of levels or a function');
  }
  const levelOf = (event: StratusEvent): EventLogLevel => {
    const chosen =
      typeof levels === 'function'
        ? levels(event)
        : (levels?.[`${event.component}.${event.type}`] ?? levels?.[event.type]);
    return chosen ?? defaultLevel(event);
  };
  const dispose = subscribeStratusEvents((event) => {
    const level = levelOf(event);
    if (level === 'silent' || logger.isLevelEnabled?.(level) === false) return;
    const { component, name, type, at } = event;
    logger[level](
      { [key]: { component, name, type, at, ...eventFields(event) } },
      `${component} "${name}" ${type}`,
    );
  });
  return { dispose };
}
