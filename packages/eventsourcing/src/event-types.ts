import { assertFunction, assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import type { RecordedEvent } from './backend.js';
import { UnknownEventTypeError } from './errors.js';

/** Takes an event's data from schema version n to n + 1. */
export type Upcaster = (data: unknown, event: RecordedEvent) => unknown;

export interface EventTypeDefinition {
  /** The schema version new events of this type are written with; default 1. */
  readonly schemaVersion?: number;
  /** `upcasters[n]` takes data written at version n to n + 1, for every n below `schemaVersion`. */
  readonly upcasters?: Readonly<Record<number, Upcaster>>;
  /** Checks data before it is appended: throw (or return a message) to refuse it. */
  readonly validate?: (data: unknown) => string | undefined | void;
}

export interface EventTypesOptions {
  /**
   * Refuse appending event types not defined here (UnknownEventTypeError); default true. Reading an unknown type
   * returns it as stored either way: the log is history, and old types must stay readable.
   */
  readonly strict?: boolean;
}

/**
 * The known event types, their current schema versions and the upcasters that bring old events up to date on
 * read (events are never rewritten in the store).
 */
export class EventTypes {
  readonly strict: boolean;
  readonly #types = new Map<
    string,
    {
      schemaVersion: number;
      upcasters: Readonly<Record<number, Upcaster>>;
      validate?: EventTypeDefinition['validate'];
    }
  >();

  constructor(definitions: Readonly<Record<string, EventTypeDefinition>>, options: EventTypesOptions = {}) {
    assertObject('definitions', definitions as unknown);
    this.strict = options.strict ?? true;
    for (const [type, definition] of Object.entries(definitions)) {
      assertObject(`definitions.${type}`, definition as unknown);
      const { schemaVersion = 1, upcasters = {}, validate } = definition;
      assertInteger(`definitions.${type}.schemaVersion`, schemaVersion, 1);
      for (let version = 1; version < schemaVersion; version++) {
        const upcaster = upcasters[version];
        if (upcaster === undefined) {
          throw new InvalidOptionsError(
            `definitions.${type}.upcasters`,
            `no upcaster from schema version ${version} to ${version + 1}`,
          );
        }
        assertFunction(`definitions.${type}.upcasters.${version}`, upcaster);
      }
      if (validate !== undefined) assertFunction(`definitions.${type}.validate`, validate);
      this.#types.set(type, { schemaVersion, upcasters, validate });
    }
  }

  has(type: string): boolean {
    return this.#types.has(type);
  }

  /** The schema version to write `type` with; throws UnknownEventTypeError when strict and unknown. */
  schemaVersionFor(type: string): number {
    const known = this.#types.get(type);
    if (known !== undefined) return known.schemaVersion;
    if (this.strict) throw new UnknownEventTypeError(type);
    return 1;
  }

  /** The reason `data` is refused for `type`, if it is. */
  problemWith(type: string, data: unknown): string | undefined {
    const validate = this.#types.get(type)?.validate;
    if (validate === undefined) return undefined;
    try {
      return validate(data) ?? undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /** The event with its data brought to the type's current schema version. */
  upcast<E extends RecordedEvent>(event: E): E {
    const known = this.#types.get(event.type);
    if (known === undefined || event.schemaVersion === known.schemaVersion) return event;
    if (event.schemaVersion > known.schemaVersion)
      throw new UnknownEventTypeError(event.type, event.schemaVersion);
    let data = event.data;
    for (let version = event.schemaVersion; version < known.schemaVersion; version++) {
      const upcaster = known.upcasters[version];
      if (upcaster === undefined) throw new UnknownEventTypeError(event.type, version);
      data = upcaster(data, event);
    }
    return { ...event, data, schemaVersion: known.schemaVersion };
  }
}
