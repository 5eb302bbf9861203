import { StratusError } from '@stratus/core';

/** A command that the aggregate's current state does not allow (the Journey's InvalidOperationException). */
export class InvalidOperationError extends StratusError {
  constructor(message: string) {
    super('ERR_CONFERENCE_INVALID_OPERATION', message);
  }
}

/** An aggregate or read-model entry that does not exist (the Journey's EntityNotFoundException). */
export class NotFoundError extends StratusError {
  readonly entityType: string;
  readonly entityId: string;
  constructor(entityType: string, entityId: string) {
    super('ERR_CONFERENCE_NOT_FOUND', `${entityType} ${JSON.stringify(entityId)} does not exist`);
    this.entityType = entityType;
    this.entityId = entityId;
  }
}

/** Input that breaks a rule; `fields` maps each offending field to its message (the API's 400 body). */
export class ValidationError extends StratusError {
  readonly fields: Readonly<Record<string, string>>;
  constructor(fields: Readonly<Record<string, string>>, message = 'The request is not valid.') {
    super('ERR_CONFERENCE_VALIDATION', message);
    this.fields = fields;
  }
}

/** A value that must be unique is taken (a conference slug). */
export class ConflictError extends StratusError {
  constructor(message: string) {
    super('ERR_CONFERENCE_CONFLICT', message);
  }
}
