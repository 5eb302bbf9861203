/**
 * How a process instance is stored: its own stream of two record types. A `process-step` holds everything one
 * handled event decided (new state, commands and timeouts to send, completion), written in ONE append at the
 * version the decision was made on; a `process-dispatched` marks outgoing messages as sent (or the next step's
 * `sent` does). Folding the stream gives the state, the ids of the events already handled, and what was recorded
 * but not yet sent.
 */
import type { RecordedEvent } from '../backend.js';

export const STEP_RECORD = 'process-step';
export const DISPATCHED_RECORD = 'process-dispatched';

export interface RecordedCommand {
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  readonly correlationId?: string;
  /** Epoch ms. */
  readonly expiresAt?: number;
}

export interface RecordedTimeout {
  readonly id: string;
  readonly type: string;
  readonly data: unknown;
  /** Epoch ms. */
  readonly dueAt: number;
}

export interface StepRecord {
  readonly eventId: string;
  readonly eventType: string;
  /** Present when the state changed. */
  readonly state?: unknown;
  readonly commands: readonly RecordedCommand[];
  readonly timeouts: readonly RecordedTimeout[];
  readonly cancelledTimeouts: readonly string[];
  readonly completed: boolean;
  /**
   * Ids of messages recorded by earlier steps and sent before this one: their mark, carried by this step instead of
   * a `process-dispatched` record of its own (ProcessCacheOptions.deferSentMarksMs).
   */
  readonly sent?: readonly string[];
}

export interface DispatchedRecord {
  readonly ids: readonly string[];
}

/** A message recorded by a step and not yet marked dispatched. */
export type PendingMessage =
  | { readonly kind: 'command'; readonly command: RecordedCommand }
  | { readonly kind: 'timeout'; readonly timeout: RecordedTimeout };

export function pendingId(message: PendingMessage): string {
  return message.kind === 'command' ? message.command.id : message.timeout.id;
}

export interface ProcessInstance<State> {
  readonly processId: string;
  readonly state: State;
  /** The stream version (0: the process does not exist yet). */
  readonly version: number;
  readonly completed: boolean;
  /** Ids of the events this process has handled. */
  readonly handledEventIds: ReadonlySet<string>;
  /** Recorded commands and timeouts not marked sent, in the order they were recorded. */
  readonly pending: readonly PendingMessage[];
  /** The timeouts that will still be acted on, by event type. */
  readonly liveTimeouts: ReadonlyMap<string, RecordedTimeout>;
}

/** What folding reads of a record: records just appended can be applied without reading them back. */
export type ProcessRecord = Pick<RecordedEvent, 'type' | 'data' | 'streamVersion'>;

/**
 * A folded stream with what folding on needs: every recorded message not yet marked sent (some only become
 * unsendable later), and the ids marked sent (a later step may record a message sent before). Never changed
 * once made: `foldOnto` copies it.
 */
export interface ProcessFold<State> {
  readonly processId: string;
  readonly state: State;
  readonly version: number;
  readonly completed: boolean;
  readonly handledEventIds: ReadonlySet<string>;
  readonly pending: ReadonlyMap<string, PendingMessage>;
  readonly dispatched: ReadonlySet<string>;
  readonly liveTimeouts: ReadonlyMap<string, RecordedTimeout>;
}

interface FoldInProgress<State> {
  readonly processId: string;
  state: State;
  version: number;
  completed: boolean;
  readonly handledEventIds: Set<string>;
  readonly pending: Map<string, PendingMessage>;
  readonly dispatched: Set<string>;
  readonly liveTimeouts: Map<string, RecordedTimeout>;
}

/** The fold of a process with no records yet. */
export function emptyFold<State>(processId: string, initialState: State): ProcessFold<State> {
  return {
    processId,
    state: initialState,
    version: 0,
    completed: false,
    handledEventIds: new Set(),
    pending: new Map(),
    dispatched: new Set(),
    liveTimeouts: new Map(),
  };
}

/** A new fold: `fold` with `records` applied after it (`fold` and the instances made from it stay as they are). */
export function foldOnto<State>(
  fold: ProcessFold<State>,
  records: readonly ProcessRecord[],
): ProcessFold<State> {
  const next: FoldInProgress<State> = {
    ...fold,
    handledEventIds: new Set(fold.handledEventIds),
    pending: new Map(fold.pending),
    dispatched: new Set(fold.dispatched),
    liveTimeouts: new Map(fold.liveTimeouts),
  };
  for (const record of records) applyRecord(next, record);
  return next;
}

function applyRecord<State>(fold: FoldInProgress<State>, record: ProcessRecord): void {
  const { handledEventIds, pending, dispatched, liveTimeouts } = fold;
  fold.version = record.streamVersion;
  if (record.type === STEP_RECORD) {
    const step = record.data as StepRecord;
    markSent(fold, step.sent ?? []);
    handledEventIds.add(step.eventId);
    if ('state' in step) fold.state = step.state as State;
    // A timeout that has fired is no longer pending (it may be scheduled again by this very step).
    const fired = liveTimeouts.get(step.eventType);
    if (fired?.id === step.eventId) liveTimeouts.delete(step.eventType);
    for (const type of step.cancelledTimeouts) liveTimeouts.delete(type);
    for (const command of step.commands) {
      if (!dispatched.has(command.id)) pending.set(command.id, { kind: 'command', command });
    }
    for (const timeout of step.timeouts) {
      liveTimeouts.set(timeout.type, timeout);
      if (!dispatched.has(timeout.id)) pending.set(timeout.id, { kind: 'timeout', timeout });
    }
    if (step.completed) {
      fold.completed = true;
      liveTimeouts.clear();
    }
  } else if (record.type === DISPATCHED_RECORD) {
    markSent(fold, (record.data as DispatchedRecord).ids);
  }
}

function markSent<State>(fold: FoldInProgress<State>, ids: readonly string[]): void {
  for (const id of ids) {
    fold.dispatched.add(id);
    fold.pending.delete(id);
  }
}

export function instanceOf<State>(fold: ProcessFold<State>): ProcessInstance<State> {
  const { processId, state, version, completed, handledEventIds, liveTimeouts } = fold;
  return {
    processId,
    state,
    version,
    completed,
    handledEventIds,
    // A timeout dropped before it was sent (superseded, cancelled, completed) need not be sent at all.
    pending: [...fold.pending.values()].filter(
      (message) =>
        message.kind === 'command' || liveTimeouts.get(message.timeout.type)?.id === message.timeout.id,
    ),
    liveTimeouts,
  };
}

/** Builds an instance from its stream (records of unknown types are skipped: written by a newer version). */
export function foldProcess<State>(
  processId: string,
  initialState: State,
  records: readonly RecordedEvent[],
): ProcessInstance<State> {
  return instanceOf(foldOnto(emptyFold(processId, initialState), records));
}
