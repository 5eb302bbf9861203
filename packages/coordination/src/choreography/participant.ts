import { assertObject, InvalidOptionsError } from '@stratus/core';
import { UndeclaredSagaEventError } from './errors.js';
import { SAGA_EVENT_KINDS, type SagaEventBody, type SagaEventKind } from './saga-event.js';

/** An event a handler wants published (built with `context.emit`). */
export interface EmittedSagaEvent {
  readonly type: string;
  readonly kind: SagaEventKind;
  readonly data: unknown;
}

export interface ParticipantContext {
  readonly sagaId: string;
  /**
   * `<participant>:<message id>`: the same on every delivery of this message (the bus retries failed handlers and
   * may deliver twice), so a service that records it acts once.
   */
  readonly idempotencyKey: string;
  /** Builds an event to return; throws UndeclaredSagaEventError for a type not in `emits`. */
  emit(type: string, data?: unknown): EmittedSagaEvent;
  readonly signal: AbortSignal;
}

/** Reacts to one event; returns the events to publish (none, one or several). Throw to have the bus retry it. */
export type ParticipantHandler = (
  event: SagaEventBody,
  context: ParticipantContext,
) =>
  | Promise<EmittedSagaEvent | readonly EmittedSagaEvent[] | undefined>
  | EmittedSagaEvent
  | readonly EmittedSagaEvent[]
  | undefined;

/**
 * A service's part in a choreographed saga: the events it reacts to (its handlers, compensations included) and
 * the events it may emit, each with its kind ('compensated' for its compensation events). No participant
 * knows the others: each only knows event types, so adding one changes none of the rest.
 */
export interface ParticipantDefinition {
  /** Names its subscription queue and its messages; letters, digits and _ - only. */
  readonly name: string;
  readonly reactsTo: Readonly<Record<string, ParticipantHandler>>;
  readonly emits: Readonly<Record<string, Exclude<SagaEventKind, 'started'>>>;
}

const PARTICIPANT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$/;
const EVENT_TYPE = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$/;

/** Declares a participant, checked at once (InvalidOptionsError). */
export function defineParticipant(definition: ParticipantDefinition): ParticipantDefinition {
  assertObject('participant', definition as unknown);
  const { name, reactsTo, emits } = definition;
  if (typeof name !== 'string' || !PARTICIPANT_NAME.test(name) || name === 'initiator')
    throw new InvalidOptionsError(
      'participant.name',
      'expected 1-100 letters, digits, _ and -, not "initiator"',
    );
  assertObject('participant.reactsTo', reactsTo as unknown);
  const reactions = Object.entries(reactsTo);
  if (reactions.length === 0)
    throw new InvalidOptionsError('participant.reactsTo', 'expected at least one event');
  for (const [type, handler] of reactions) {
    if (!EVENT_TYPE.test(type))
      throw new InvalidOptionsError(
        `participant.reactsTo.${type}`,
        'expected an event type of letters, digits, _ . : -',
      );
    if (typeof handler !== 'function')
      throw new InvalidOptionsError(`participant.reactsTo.${type}`, 'expected a handler function');
  }
  assertObject('participant.emits', emits as unknown);
  for (const [type, kind] of Object.entries(emits)) {
    if (!EVENT_TYPE.test(type))
      throw new InvalidOptionsError(
        `participant.emits.${type}`,
        'expected an event type of letters, digits, _ . : -',
      );
    if (!SAGA_EVENT_KINDS.includes(kind) || (kind as string) === 'started')
      throw new InvalidOptionsError(
        `participant.emits.${type}`,
        "expected 'step', 'failed', 'compensated' or 'completed'",
      );
  }
  return definition;
}

/** The `emit` of a participant's handler context. */
export function emitterOf(
  participant: ParticipantDefinition,
): (type: string, data?: unknown) => EmittedSagaEvent {
  return (type, data) => {
    const kind = Object.hasOwn(participant.emits, type) ? participant.emits[type] : undefined;
    if (kind === undefined) throw new UndeclaredSagaEventError(participant.name, type);
    return { type, kind, data: data === undefined ? null : data };
  };
}

/** Whether a participant declares compensation events, i.e. must compensate when a saga it acted in fails. */
export function compensates(participant: ParticipantDefinition): boolean {
  return Object.values(participant.emits).includes('compensated');
}
