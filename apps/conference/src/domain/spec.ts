/**
 * Given-when-then for deciders in tests: `given(decider, history).when(command)` is what the command decides after
 * that history. Histories and states are deep-frozen, so an evolve or decide that mutates its input throws.
 */
import type { Decider, DomainEvent } from '@stratus/eventsourcing';

export function given<State, Event extends DomainEvent, Command>(
  decider: Decider<State, Event, Command>,
  history: readonly Event[] = [],
) {
  const state = replay(decider, history);
  return {
    state,
    when(command: Command): readonly Event[] {
      if (decider.decide === undefined) throw new Error('this decider has no decide function');
      const decided = decider.decide(command, state);
      return Array.isArray(decided) ? decided : [decided as Event];
    },
  };
}

/** The state after `events`, from the initial state. */
export function replay<State, Event extends DomainEvent, Command>(
  decider: Decider<State, Event, Command>,
  events: readonly Event[],
): State {
  return events.reduce(
    (state, event) => deepFreeze(decider.evolve(state, deepFreeze(event))),
    deepFreeze(decider.initialState()),
  );
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
