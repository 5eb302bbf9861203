import { isDeepStrictEqual } from 'node:util';
import {
  assertDuration,
  assertFunction,
  assertObject,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  StratusError,
  type StratusEvent,
  systemClock,
  type TimerHandle,
  type Unsubscribe,
} from '@stratus/core';
import { EventRelay } from './event-relay.js';
import type { ExecuteOptions, Operation, Policy } from './policy.js';

/** What a builder is told besides its options. */
export interface PipelineBuildContext<O> {
  /** The registered name. */
  readonly name: string;
  /** The version this build becomes if it succeeds: 1 for the first build. */
  readonly version: number;
  /** The options of the pipeline being replaced; undefined on the first build. */
  readonly previousOptions: O | undefined;
  /**
   * Keeps a component across rebuilds: `create` gets what the previous successful build kept under `key`
   * (undefined the first time) and returns what this build uses and keeps. Return `previous` to keep the
   * same instance (a breaker keeps its state and its listeners), or build a new one from its state
   * (`circuitBreaker({ ...o, initialState: previous?.exportState() })`). Keys not used by a build are dropped.
   */
  carry<T>(key: string, create: (previous: T | undefined) => T): T;
}

/** Builds a pipeline from options; throws (e.g. InvalidOptionsError) on options it cannot use. */
export type PipelineBuilder<O, E extends StratusEvent = StratusEvent> = (
  options: O,
  context: PipelineBuildContext<O>,
) => Policy<E>;

/**
 * A stable handle on a registered pipeline: keep it, and every call runs on whatever pipeline is in force
 * when the call starts. `events` follows the pipeline in force.
 */
export interface PipelineHandle<O = unknown, E extends StratusEvent = StratusEvent> extends Policy<E> {
  readonly version: number;
  readonly options: O;
  /** The pipeline in force now. */
  readonly current: Policy<E>;
  /** Same as `registry.reconfigure(handle.name, options)`. */
  reconfigure(options: O): number;
}

interface RegistryEventBase extends StratusEvent {
  readonly component: 'pipeline-registry';
}

export type PipelineRegistryEvent =
  /** `name` was rebuilt and swapped in; calls from now on run on `version`. */
  | (RegistryEventBase & {
      readonly type: 'reconfigured';
      readonly version: number;
      readonly previousVersion: number;
    })
  /** Rebuilding `name` failed; `version` stays in force (0: no pipeline of that name is defined). */
  | (RegistryEventBase & {
      readonly type: 'reconfigure-failed';
      readonly version: number;
      readonly error: unknown;
    })
  /** A watched source failed to deliver a configuration (`name` is the registry's). */
  | (RegistryEventBase & { readonly type: 'source-failed'; readonly error: unknown });

/** Pipeline options by pipeline name, as found in a configuration file or service. */
export type PipelineConfig = Readonly<Record<string, unknown>>;

/** A configuration read every `intervalMs` (the next read starts `intervalMs` after the previous ended). */
export interface PollingConfigSource {
  load(): PipelineConfig | PromiseLike<PipelineConfig>;
  intervalMs: number;
}

/** A configuration pushed as the first argument of `event` (default 'change'), e.g. by a node EventEmitter. */
export interface EmitterConfigSource {
  emitter: {
    on(event: string, listener: (config: PipelineConfig) => void): unknown;
    off(event: string, listener: (config: PipelineConfig) => void): unknown;
  };
  event?: string;
}

export type PipelineConfigSource = PollingConfigSource | EmitterConfigSource;

export interface PipelineRegistryOptions {
  /** Names the registry in its events; default 'pipeline-registry'. */
  name?: string;
  /** Used for event times and polling. */
  clock?: Clock;
}

export class PipelineNotFoundError extends StratusError {
  constructor(readonly pipeline: string) {
    super('ERR_STRATUS_PIPELINE_NOT_FOUND', `No pipeline named "${pipeline}" is defined`);
  }
}

/** A reconfiguration was refused; every pipeline it named keeps the version it had. */
export class PipelineReloadError extends StratusError {
  constructor(
    /** The error of each pipeline that could not be rebuilt, by name. */
    readonly failures: ReadonlyMap<string, unknown>,
  ) {
    const details = [...failures].map(([name, error]) => `"${name}": ${describeError(error)}`).join('; ');
    const [first] = failures.values();
    super('ERR_STRATUS_PIPELINE_RELOAD', `Pipelines not reconfigured, previous versions kept: ${details}`, {
      cause: failures.size === 1 ? first : undefined,
    });
  }
}

/**
 * Named pipelines built from options, rebuilt at run time (Polly v8's ResiliencePipelineRegistry with
 * dynamic reload). `define` builds a pipeline and returns a stable handle; `reconfigure`, `reload` and
 * `watch` rebuild pipelines from new options and swap them in: calls in flight finish on the pipeline they
 * started on, later calls use the new one. A rebuild that throws changes nothing (and `reload` is all or
 * nothing across the pipelines it names), so a bad configuration never replaces a working one.
 */
export class PipelineRegistry {
  readonly name: string;
  readonly events = new EventEmitter<PipelineRegistryEvent>();
  readonly clock: Clock;
  readonly #entries = new Map<string, Entry<unknown, StratusEvent>>();

  constructor(options: PipelineRegistryOptions = {}) {
    assertObject('options', options as unknown);
    this.name = options.name ?? 'pipeline-registry';
    this.clock = options.clock ?? systemClock;
  }

  /** Builds `name` from `options` (a builder error propagates and nothing is registered). */
  define<O, E extends StratusEvent>(
    name: string,
    builder: PipelineBuilder<O, E>,
    options: O,
  ): PipelineHandle<O, E> {
    if (typeof name !== 'string' || name === '')
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    if (this.#entries.has(name))
      throw new InvalidOptionsError('name', `a pipeline named "${name}" is already defined`);
    assertFunction('builder', builder);
    const entry = new Entry(this, name, builder, build(name, builder, options, undefined));
    this.#entries.set(name, entry as unknown as Entry<unknown, StratusEvent>);
    return entry;
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  /** The handle of `name`, the same object on every call. */
  get(name: string): PipelineHandle {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new PipelineNotFoundError(name);
    return entry;
  }

  /** Rebuilds `name` from `options` and swaps it in; returns the new version. Throws PipelineReloadError. */
  reconfigure(name: string, options: unknown): number {
    const handle = this.get(name);
    this.reload({ [name]: options }, { force: true });
    return handle.version;
  }

  /**
   * Rebuilds every pipeline named in `config` whose options changed (deep equality; `force` rebuilds all
   * named ones), then swaps them all in at once. If any name is unknown or any build throws, none is
   * swapped and PipelineReloadError lists why. Returns the names rebuilt.
   */
  reload(config: PipelineConfig, { force = false } = {}): string[] {
    assertObject('config', config as unknown);
    const built: [Entry<unknown, StratusEvent>, Built<unknown, StratusEvent>][] = [];
    const failures = new Map<string, unknown>();
    for (const [name, options] of Object.entries(config)) {
      const entry = this.#entries.get(name);
      if (entry === undefined) {
        const error = new PipelineNotFoundError(name);
        failures.set(name, error);
        this.#emit({ type: 'reconfigure-failed', name, version: 0, error });
        continue;
      }
      if (!force && isDeepStrictEqual(entry.options, options)) continue;
      try {
        built.push([entry, build(name, entry.builder, options, entry.built)]);
      } catch (error) {
        failures.set(name, error);
        this.#emit({ type: 'reconfigure-failed', name, version: entry.version, error });
      }
    }
    if (failures.size > 0) throw new PipelineReloadError(failures);
    for (const [entry, next] of built) {
      const previousVersion = entry.version;
      entry.swap(next);
      this.#emit({ type: 'reconfigured', name: entry.name, version: next.version, previousVersion });
    }
    return built.map(([entry]) => entry.name);
  }

  /**
   * Applies every configuration `source` delivers with `reload` (only changed pipelines are rebuilt). Failures
   * are reported as events: 'source-failed' when no configuration could be read, 'reconfigure-failed' when
   * one was refused. Returns a function that stops watching.
   */
  watch(source: PipelineConfigSource): Unsubscribe {
    assertObject('source', source as unknown);
    const apply = (config: PipelineConfig): void => {
      try {
        this.reload(config);
      } catch (error) {
        // Refused pipelines were reported one by one; any other error means the config was not an object.
        if (!(error instanceof PipelineReloadError))
          this.#emit({ type: 'source-failed', name: this.name, error });
      }
    };
    if ('emitter' in source) {
      assertObject('source.emitter', source.emitter as unknown);
      assertFunction('source.emitter.on', source.emitter.on);
      assertFunction('source.emitter.off', source.emitter.off);
      const event = source.event ?? 'change';
      source.emitter.on(event, apply);
      return () => source.emitter.off(event, apply);
    }
    assertFunction('source.load', source.load);
    assertDuration('source.intervalMs', source.intervalMs, { allowZero: false });
    return this.#poll(source, apply);
  }

  #poll(source: PollingConfigSource, apply: (config: PipelineConfig) => void): Unsubscribe {
    let stopped = false;
    let timer: TimerHandle | undefined;
    const tick = async (): Promise<void> => {
      timer = undefined;
      try {
        const config = await source.load();
        if (!stopped) apply(config);
      } catch (error) {
        if (!stopped) this.#emit({ type: 'source-failed', name: this.name, error });
      }
      if (!stopped) timer = this.clock.setTimeout(tick, source.intervalMs, { unref: true });
    };
    void tick();
    return () => {
      stopped = true;
      if (timer !== undefined) this.clock.clearTimeout(timer);
    };
  }

  #emit(event: DistributiveOmit<PipelineRegistryEvent, 'component' | 'at'>): void {
    if (this.events.active) {
      this.events.emit({
        ...event,
        component: 'pipeline-registry',
        at: this.clock.now(),
      } as PipelineRegistryEvent);
    }
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One successful build. */
interface Built<O, E extends StratusEvent> {
  readonly pipeline: Policy<E>;
  readonly options: O;
  readonly version: number;
  readonly carried: ReadonlyMap<string, unknown>;
}

function build<O, E extends StratusEvent>(
  name: string,
  builder: PipelineBuilder<O, E>,
  options: O,
  previous: Built<O, E> | undefined,
): Built<O, E> {
  const carried = new Map<string, unknown>();
  const context: PipelineBuildContext<O> = {
    name,
    version: (previous?.version ?? 0) + 1,
    previousOptions: previous?.options,
    carry<T>(key: string, create: (previous: T | undefined) => T): T {
      if (carried.has(key))
        throw new InvalidOptionsError('carry', `key "${key}" was already used by this build`);
      const value = create(previous?.carried.get(key) as T | undefined);
      carried.set(key, value);
      return value;
    },
  };
  const pipeline = builder(options, context);
  if (!isPolicy(pipeline)) {
    throw new InvalidOptionsError('builder', `the builder of "${name}" did not return a policy`);
  }
  return { pipeline, options, version: context.version, carried };
}

function isPolicy(value: unknown): value is Policy {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Policy>;
  return typeof candidate.execute === 'function' && candidate.events instanceof EventEmitter;
}

class Entry<O, E extends StratusEvent> implements PipelineHandle<O, E> {
  readonly events: EventRelay<E>;
  #built: Built<O, E>;
  /** Read on every call: the pipeline itself, not through #built, to keep the hot path one load short. */
  #current: Policy<E>;

  constructor(
    readonly registry: PipelineRegistry,
    readonly name: string,
    readonly builder: PipelineBuilder<O, E>,
    built: Built<O, E>,
  ) {
    this.#built = built;
    this.#current = built.pipeline;
    this.events = new EventRelay([built.pipeline.events]);
  }

  get built(): Built<O, E> {
    return this.#built;
  }
  get version(): number {
    return this.#built.version;
  }
  get options(): O {
    return this.#built.options;
  }
  get current(): Policy<E> {
    return this.#current;
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    return this.#current.execute(operation, options);
  }

  reconfigure(options: O): number {
    return this.registry.reconfigure(this.name, options);
  }

  swap(next: Built<O, E>): void {
    this.#built = next;
    this.#current = next.pipeline;
    this.events.setSources([next.pipeline.events]);
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
