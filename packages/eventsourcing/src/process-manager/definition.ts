import type { EventMetadata } from '../backend.js';

/** What a process reacts to: a recorded event (from a subscription or a queue) or a timeout coming back. */
export interface ProcessEvent<Type extends string = string, Data = unknown> {
  /** Unique per event: the key that makes handling idempotent per process. */
  readonly id: string;
  readonly type: Type;
  readonly data: Data;
  readonly metadata?: EventMetadata;
  /** Set on recorded events; events of the manager's own streams are never routed back to it. */
  readonly streamName?: string;
}

/** A command the process wants sent, once its decision is stored. */
export interface CommandToSend {
  readonly type: string;
  readonly data: unknown;
  /** Default: derived from the process, the event being handled and the command's position (deterministic). */
  readonly id?: string;
  readonly correlationId?: string;
  /**
   * Epoch ms after which the command must not run (the Journey's time-to-live on MakeSeatReservation): absolute,
   * so a resend after a crash keeps the original deadline.
   */
  readonly expiresAt?: number;
}

/**
 * A timeout: `event` comes back to `handle` when it falls due, unless the process completed, cancelled it or
 * scheduled another timeout of the same event type since (a timeout for a state that moved on is dropped).
 */
export interface TimeoutToSchedule<Event extends { type: string; data: unknown }> {
  readonly event: { readonly type: Event['type']; readonly data: Event['data'] };
  /** Epoch ms; or give afterMs (from the manager's clock now). */
  readonly at?: number;
  readonly afterMs?: number;
}

/** The decision of one `handle` call; every part is optional (an empty outcome changes nothing). */
export interface ProcessOutcome<State, Event extends { type: string; data: unknown }> {
  /** The new state (JSON-serialisable); absent: unchanged. */
  readonly state?: State;
  readonly send?: readonly CommandToSend[];
  readonly schedule?: readonly TimeoutToSchedule<Event>[];
  /** Event types of pending timeouts to drop. */
  readonly cancelTimeouts?: readonly Event['type'][];
  /** The process is over: later events for it are ignored and its timeouts dropped. */
  readonly complete?: boolean;
}

export interface ProcessContext {
  readonly processId: string;
  /** Epoch ms from the manager's clock. */
  readonly now: number;
  /** The process stream's version before this event (0: the process is starting). */
  readonly version: number;
  /** True when the event is a timeout of this process coming back. */
  readonly isTimeout: boolean;
  /**
   * A deterministic id for `key` (the same every time this event is handled for this process): use it for an id
   * the state must remember, e.g. the command whose reply is awaited, then send the command with that id.
   */
  id(key: string): string;
}

/**
 * A process manager (a saga orchestrated from events), as data and a pure decision function. Each instance is
 * persisted as the stream `<name>-<processId>` in the event store.
 */
export interface ProcessDefinition<State, Event extends ProcessEvent = ProcessEvent> {
  /** The stream category of its instances: non-empty, no '-'. */
  readonly name: string;
  /** Event types that create a process when none exists for their correlation id; others are ignored then. */
  readonly startedBy: readonly Event['type'][];
  /** The id of the process an event belongs to, or undefined when it concerns none. */
  correlate(event: Event): string | undefined;
  initialState(processId: string): State;
  /** Must not mutate `state`. May throw: nothing is stored and the event's source retries it. */
  handle(state: State, event: Event, context: ProcessContext): ProcessOutcome<State, Event> | undefined;
}
