// The errors particular to the SQLite message backend.
import { StratusError } from '@stratus/core';
import { QUEUE_RANGE } from './statements.js';

/** Queue ids are limited (each owns a range of 2^32 sequences below 2^53): this many queues exist already. */
export class TooManyQueuesError extends StratusError {
  constructor(max: number) {
    super('ERR_STRATUS_TOO_MANY_QUEUES', `A SQLite message database holds at most ${max} queues at a time`);
  }
}

/** The queue used up its 2^32 sequences; deleting and recreating it starts a new range. */
export class QueueFullError extends StratusError {
  readonly queue: string;
  constructor(queue: string) {
    super('ERR_STRATUS_QUEUE_FULL', `Queue "${queue}" has used all of its ${QUEUE_RANGE} sequences`);
    this.queue = queue;
  }
}

/** The backend was closed; it no longer touches its database. */
export class BackendClosedError extends StratusError {
  constructor(kind: string) {
    super('ERR_STRATUS_BACKEND_CLOSED', `The ${kind} message backend is closed`);
  }
}
