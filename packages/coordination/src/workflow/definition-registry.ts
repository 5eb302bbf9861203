import { InvalidOptionsError } from '@stratus/core';
import type { WorkflowDefinition } from './definition.js';
import { DuplicateWorkflowError, UnknownWorkflowError } from './errors.js';

type Definition = WorkflowDefinition<never, unknown>;

/** An engine's definitions, by `name@version` (what a state record names) and by name at their highest version. */
export class DefinitionRegistry {
  readonly #byKey = new Map<string, Definition>();
  readonly #latest = new Map<string, Definition>();
  #keys: readonly string[] = [];

  /** `name@version` of every definition registered. */
  get keys(): readonly string[] {
    return this.#keys;
  }

  has(key: string): boolean {
    return this.#byKey.has(key);
  }

  get(key: string): Definition | undefined {
    return this.#byKey.get(key);
  }

  add(definition: Definition): void {
    if (this.#byKey.has(definition.key))
      throw new DuplicateWorkflowError(definition.name, definition.version);
    this.#byKey.set(definition.key, definition);
    const latest = this.#latest.get(definition.name);
    if (latest === undefined || latest.version < definition.version)
      this.#latest.set(definition.name, definition);
    this.#keys = [...this.#byKey.keys()];
  }

  /** The definition a workflow starts on: `name` at `version`, or at its highest registered version. */
  find(name: unknown, version: number | undefined): Definition {
    if (typeof name !== 'string')
      throw new InvalidOptionsError('workflow', 'expected a workflow name or definition');
    if (version !== undefined) {
      if (!Number.isSafeInteger(version) || version < 1)
        throw new InvalidOptionsError('version', 'expected a positive integer');
      const found = this.#byKey.get(`${name}@${version}`);
      if (found === undefined) throw new UnknownWorkflowError(name, version);
      return found;
    }
    const found = this.#latest.get(name);
    if (found === undefined) throw new UnknownWorkflowError(name);
    return found;
  }
}
