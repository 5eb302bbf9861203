import type { AppendResult, EventToStore, ExpectedVersion, ReadStreamQuery } from './backend.js';
import { DuplicateEventIdError, WrongExpectedVersionError } from './errors.js';

/** Whether a stream at `version` (0: none) satisfies the append's expectation. */
export function versionMatches(expected: ExpectedVersion, version: number): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no-stream':
      return version === 0;
    case 'stream-exists':
      return version > 0;
    default:
      return expected === version;
  }
}

export function checkExpectedVersion(streamName: string, expected: ExpectedVersion, version: number): void {
  if (!versionMatches(expected, version)) throw new WrongExpectedVersionError(streamName, expected, version);
}

/** Where a stored event with a given id sits. */
export interface StoredPlace {
  readonly streamName: string;
  readonly streamVersion: number;
  readonly globalPosition: number;
}

/**
 * Decides what an append whose ids (some or all) are already stored is: the same events appended again to the
 * same stream, in the same order and consecutively (an idempotent retry: the original's positions are returned),
 * or a clash (DuplicateEventIdError). Undefined when none of the ids is stored. Backends call it only when the
 * append cannot go ahead as is (wrong version, or an id already taken), so the common path pays nothing.
 */
export function repeatedAppend(
  streamName: string,
  events: readonly EventToStore[],
  lookup: (id: string) => StoredPlace | undefined,
): Omit<AppendResult, 'nextExpectedVersion'> | undefined {
  if (events.length === 0) return undefined;
  const places = events.map((event) => lookup(event.id));
  const firstFound = places.findIndex((place) => place !== undefined);
  if (firstFound < 0) return undefined;
  const first = places[0];
  const repeat =
    first !== undefined &&
    first.streamName === streamName &&
    places.every(
      (place, i) =>
        place !== undefined &&
        place.streamName === streamName &&
        place.streamVersion === first.streamVersion + i,
    );
  if (!repeat) {
    const clash = places[firstFound] as StoredPlace;
    throw new DuplicateEventIdError((events[firstFound] as EventToStore).id, clash.streamName);
  }
  const last = places[places.length - 1] as StoredPlace;
  return {
    streamName,
    firstPosition: first.globalPosition,
    lastPosition: last.globalPosition,
    written: false,
  };
}

/** The 0-based indexes of a stream of `length` events that a read returns, in order. */
export function sliceStream(length: number, query: ReadStreamQuery): number[] {
  const { direction = 'forwards', maxCount = Number.MAX_SAFE_INTEGER } = query;
  const indexes: number[] = [];
  if (direction === 'forwards') {
    for (let i = Math.max(0, (query.from ?? 1) - 1); i < length && indexes.length < maxCount; i++)
      indexes.push(i);
  } else {
    for (let i = Math.min(length, query.from ?? length) - 1; i >= 0 && indexes.length < maxCount; i--)
      indexes.push(i);
  }
  return indexes;
}
