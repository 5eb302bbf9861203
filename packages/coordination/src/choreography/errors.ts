import { StratusError } from '@stratus/core';

/** A participant's handler emitted an event type it did not declare in `emits` (nothing was published). */
export class UndeclaredSagaEventError extends StratusError {
  readonly participant: string;
  readonly eventType: string;
  constructor(participant: string, eventType: string) {
    super(
      'ERR_STRATUS_UNDECLARED_SAGA_EVENT',
      `Participant "${participant}" emitted "${eventType}", which is not among the events it declares`,
    );
    this.participant = participant;
    this.eventType = eventType;
  }
}
