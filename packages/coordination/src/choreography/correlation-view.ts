import { assertDuration, assertObject, type Clock, InvalidOptionsError, systemClock } from '@stratus/core';
import { compensates, type ParticipantDefinition } from './participant.js';
import type { SagaEventBody, SagaEventKind } from './saga-event.js';

/**
 * in-progress: started, nobody failed or finished yet; completed: a participant finished it; compensating: a
 * participant failed and some that acted have not compensated yet; compensated: all of those have.
 */
export type ChoreographedSagaStatus = 'in-progress' | 'completed' | 'compensating' | 'compensated';

export interface SagaTraceEvent {
  readonly id: string;
  readonly type: string;
  readonly participant: string;
  readonly kind: SagaEventKind;
  readonly at: number;
}

/** Where one choreographed saga stands, from all its events (by correlation id). */
export interface SagaTrace {
  readonly sagaId: string;
  readonly status: ChoreographedSagaStatus;
  /** Its events in the order they were published. */
  readonly events: readonly SagaTraceEvent[];
  /** Participants that did their part. */
  readonly acted: readonly string[];
  /** Participants that could not. */
  readonly failed: readonly string[];
  /** Participants that undid their part. */
  readonly compensated: readonly string[];
  /** After a failure: participants that acted, declare compensations, and have not compensated yet. */
  readonly awaitingCompensation: readonly string[];
  readonly lastEventAt: number;
  /** No event for stuckAfterMs while in progress or compensating: someone failed silently (or is very slow). */
  readonly stuck: boolean;
}

export interface SagaCorrelationViewOptions {
  /** The participants, to know which must compensate after a failure. */
  readonly participants: readonly ParticipantDefinition[];
  /** A saga with no event for this long while unfinished is reported stuck; default 5 min. */
  readonly stuckAfterMs?: number;
  /** Default the system clock (the one your Messaging uses, so event times and `now` agree). */
  readonly clock?: Clock;
}

interface TraceState {
  readonly events: SagaTraceEvent[];
  readonly ids: Set<string>;
}

/**
 * A projection of every saga event on the choreography's topic, grouped by correlation id, kept in memory (feed
 * it with Choreography.runView; a new instance is rebuilt from a subscription that replays, or starts empty).
 * Duplicate deliveries are recognised by message id.
 */
export class SagaCorrelationView {
  readonly stuckAfterMs: number;
  readonly #compensators: ReadonlySet<string>;
  readonly #clock: Clock;
  readonly #sagas = new Map<string, TraceState>();

  constructor(options: SagaCorrelationViewOptions) {
    assertObject('options', options as unknown);
    const { participants, stuckAfterMs = 5 * 60_000, clock = systemClock } = options;
    if (!Array.isArray(participants))
      throw new InvalidOptionsError('participants', 'expected a list of participants');
    assertDuration('stuckAfterMs', stuckAfterMs, { allowZero: false });
    this.stuckAfterMs = stuckAfterMs;
    this.#compensators = new Set(participants.filter(compensates).map((p) => p.name));
    this.#clock = clock;
  }

  /** Adds one event (a message id seen before changes nothing); returns false for a duplicate. */
  apply(event: SagaEventBody, message: { readonly id: string; readonly at: number }): boolean {
    let state = this.#sagas.get(event.sagaId);
    if (state === undefined) {
      state = { events: [], ids: new Set() };
      this.#sagas.set(event.sagaId, state);
    }
    if (state.ids.has(message.id)) return false;
    state.ids.add(message.id);
    const entry = {
      id: message.id,
      type: event.type,
      participant: event.participant,
      kind: event.kind,
      at: message.at,
    };
    // Messages of one saga reach the view's queue in publish order, but keep it sorted should one come late.
    let at = state.events.length;
    while (at > 0 && (state.events[at - 1] as SagaTraceEvent).at > entry.at) at--;
    state.events.splice(at, 0, entry);
    return true;
  }

  get(sagaId: string): SagaTrace | undefined {
    const state = this.#sagas.get(sagaId);
    return state === undefined ? undefined : this.#trace(sagaId, state, this.#clock.now());
  }

  /** Every saga seen, optionally only those in `status` or only stuck ones. */
  list(filter: { readonly status?: ChoreographedSagaStatus; readonly stuck?: boolean } = {}): SagaTrace[] {
    const now = this.#clock.now();
    return [...this.#sagas.entries()]
      .map(([sagaId, state]) => this.#trace(sagaId, state, now))
      .filter(
        (t) =>
          (filter.status === undefined || t.status === filter.status) &&
          (filter.stuck === undefined || t.stuck === filter.stuck),
      );
  }

  #trace(sagaId: string, state: TraceState, now: number): SagaTrace {
    const who = (kind: SagaEventKind) => [
      ...new Set(state.events.filter((e) => e.kind === kind).map((e) => e.participant)),
    ];
    const acted = who('step');
    const failed = who('failed');
    const compensated = who('compensated');
    const awaitingCompensation =
      failed.length === 0 ? [] : acted.filter((p) => this.#compensators.has(p) && !compensated.includes(p));
    let status: ChoreographedSagaStatus = 'in-progress';
    if (failed.length > 0) status = awaitingCompensation.length > 0 ? 'compensating' : 'compensated';
    else if (state.events.some((e) => e.kind === 'completed')) status = 'completed';
    const lastEventAt = Math.max(...state.events.map((e) => e.at));
    const unfinished = status === 'in-progress' || status === 'compensating';
    return {
      sagaId,
      status,
      events: [...state.events],
      acted,
      failed,
      compensated,
      awaitingCompensation,
      lastEventAt,
      stuck: unfinished && now - lastEventAt >= this.stuckAfterMs,
    };
  }
}
