/**
 * A write that lost the race for one aggregate to other writes, its retries included (the event store's optimistic
 * concurrency: another request appended to the same stream in between, again and again). The request was fine and
 * may well succeed at once: the API and the sites answer 409 with this message, not a 500.
 */
import { WrongExpectedVersionError } from '@stratus/eventsourcing';

export const CONCURRENT_WRITE_MESSAGE =
  'Another request changed the same data at the same time; please try again.';

export function isConcurrentWrite(error: unknown): boolean {
  return error instanceof WrongExpectedVersionError;
}
