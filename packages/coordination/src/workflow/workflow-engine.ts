/**
 * The Scheduler of the Scheduler Agent Supervisor pattern, with in-process Agents, as a library: register
 * definitions, start workflows, and every engine with its scheduler on claims pending steps from the State Store,
 * runs them (in process, or through a RemoteAgent over a queue), and records each step's outcome.
 *
 * Latency comes from doing one store round trip per step transition: a workflow started here is submitted already
 * claimed by this engine, and completing a step claims the next in the same write, so a three-step workflow costs
 * four writes and no polling. Other processes' work arrives through the store's wake-ups (LISTEN/NOTIFY, SQLite's
 * data_version, in-process callbacks) plus a timer for the next due step (durable sleeps, retry backoff).
 *
 * The parts: ClaimPump (claiming), driveSteps (one workflow's steps and their writes), StepExecutor (running one
 * step: activities under Complete By, durable timers) and ResultWaiters (`run.result()`).
 */
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import {
  assertCount,
  assertDuration,
  assertObject,
  type Clock,
  EventEmitter,
  InvalidOptionsError,
  randomId,
  systemClock,
  type Unsubscribe,
  uuidv7,
} from '@stratus/core';
import type { Messaging } from '@stratus/messaging';
import { ClaimPump } from './claim-pump.js';
import type { CompiledWorkflowStep, WorkflowDefinition } from './definition.js';
import { DefinitionRegistry } from './definition-registry.js';
import { DuplicateWorkflowError, WorkflowIdConflictError, WorkflowNotFoundError } from './errors.js';
import type { WorkflowEventDetail } from './event-detail.js';
import type { WorkflowEvent, WorkflowFailureContext } from './events.js';
import { ResultWaiters } from './result-waiters.js';
import { driveSteps, type StepDriverHost, toJson } from './step-driver.js';
import { StepExecutor } from './step-executor.js';
import {
  type ClaimedStep,
  initialState,
  type Submission,
  type WorkflowRecord,
  type WorkflowStatus,
  type WorkflowStore,
} from './workflow-store.js';

export interface WorkflowEngineOptions {
  readonly store: WorkflowStore;
  readonly clock?: Clock;
  /** Names this engine in its events; default 'workflows'. */
  readonly name?: string;
  /** This Scheduler's id (the state record's locked-by); default `<host>-<pid>-<random>`. */
  readonly schedulerId?: string;
  /** Run a Scheduler in this engine (claim and run steps); false for a submit-only client. Default true. */
  readonly scheduler?: boolean;
  /** Workflows this Scheduler runs at once; default 256. */
  readonly concurrency?: number;
  /** Steps claimed per round trip; default 64. */
  readonly claimBatch?: number;
  /** Safety-net poll of the store in case a wake-up was missed; default 1 s. */
  readonly pollIntervalMs?: number;
  /** How often `run.result()` re-reads a workflow finished elsewhere; default 250 ms. */
  readonly resultPollMs?: number;
  /** Needed for `agent` steps: their requests go out over it, with replies on a queue of this engine's own. */
  readonly messaging?: Messaging;
}

export interface StartOptions {
  /** The workflow's id (starting an id again returns the existing workflow); default a UUIDv7. */
  readonly id?: string;
  /** Default the highest registered version. */
  readonly version?: number;
}

export interface WorkflowStatusView {
  readonly workflowId: string;
  readonly workflow: string;
  readonly version: number;
  readonly status: WorkflowStatus;
  readonly step: string;
  readonly stepStatus: string;
  readonly failureCount: number;
  readonly results: Record<string, unknown>;
  readonly result?: unknown;
  readonly failure?: WorkflowFailureContext;
}

export interface WorkflowHandle<O = unknown> {
  readonly id: string;
  /** Resolves with the last step's result, or rejects with WorkflowFailedError. */
  result(): Promise<O>;
  status(): Promise<WorkflowStatusView>;
}

export class WorkflowEngine {
  readonly name: string;
  readonly schedulerId: string;
  readonly store: WorkflowStore;
  readonly events = new EventEmitter<WorkflowEvent>();
  readonly #clock: Clock;
  readonly #runsScheduler: boolean;
  readonly #messaging: Messaging | undefined;
  readonly #definitions = new DefinitionRegistry();
  readonly #pump: ClaimPump;
  readonly #waiters: ResultWaiters;
  readonly #driver: StepDriverHost;
  readonly #executor: StepExecutor;
  readonly #drives = new Set<Promise<void>>();
  /** Workflows this engine is driving now: their waiters are settled here, without reading the store first. */
  readonly #driving = new Set<string>();
  /** Aborts every running step when the engine closes. */
  readonly #closing = new AbortController();
  #launched = false;
  #closed = false;
  #unwatch: Unsubscribe | undefined;

  constructor(options: WorkflowEngineOptions) {
    assertObject('options', options as unknown);
    const {
      store,
      clock = systemClock,
      name = 'workflows',
      scheduler = true,
      concurrency = 256,
      claimBatch = 64,
      pollIntervalMs = 1_000,
      resultPollMs = 250,
      messaging,
    } = options;
    if (typeof store?.claim !== 'function' || typeof store.transition !== 'function') {
      throw new InvalidOptionsError('store', 'expected a WorkflowStore');
    }
    if (typeof name !== 'string' || name === '')
      throw new InvalidOptionsError('name', 'expected a non-empty string');
    const schedulerId = options.schedulerId ?? `${hostname()}-${process.pid}-${randomId(4)}`;
    if (typeof schedulerId !== 'string' || schedulerId === '' || schedulerId.length > 200) {
      throw new InvalidOptionsError('schedulerId', 'expected a string of 1 to 200 characters');
    }
    if (typeof scheduler !== 'boolean') throw new InvalidOptionsError('scheduler', 'expected a boolean');
    assertCount('concurrency', concurrency, 1);
    assertCount('claimBatch', claimBatch, 1);
    assertDuration('pollIntervalMs', pollIntervalMs, { allowZero: false });
    assertDuration('resultPollMs', resultPollMs, { allowZero: false });
    if (messaging !== undefined && typeof (messaging as Partial<Messaging>).queue !== 'function') {
      throw new InvalidOptionsError('messaging', 'expected a Messaging');
    }
    this.store = store;
    this.#clock = clock;
    this.name = name;
    this.schedulerId = schedulerId;
    this.#runsScheduler = scheduler;
    this.#messaging = messaging;
    // Every running step listens for the engine closing.
    setMaxListeners(0, this.#closing.signal);
    const storeError = (error: unknown) => this.#emit({ type: 'store-error', error });
    this.#pump = new ClaimPump({
      store,
      clock,
      schedulerId,
      concurrency,
      claimBatch,
      pollMs: pollIntervalMs,
      definitions: () => this.#definitions.keys,
      claimed: (step) => {
        const definition = this.#definitions.get(step.definition);
        if (definition !== undefined) this.#drive(definition, step);
      },
      storeError,
    });
    this.#waiters = new ResultWaiters({
      store,
      clock,
      pollMs: resultPollMs,
      closed: () => this.#closed,
      storeError,
    });
    this.#executor = new StepExecutor({ store, clock, closing: this.#closing.signal, messaging });
    this.#driver = {
      store,
      clock,
      schedulerId,
      executor: this.#executor,
      closed: () => this.#closed,
      emit: (detail) => this.#emit(detail),
      parked: () => this.#pump.pump(),
      finished: (workflowId, value, failure) => {
        // Over: a later `result()` reads the store at once, even before the drive has wound down.
        this.#driving.delete(workflowId);
        this.#waiters.settle(workflowId, value, failure);
      },
    };
  }

  /** Registers a definition (from defineWorkflow) under its name and version. */
  register(definition: WorkflowDefinition<never, unknown>): this {
    const def = definition as WorkflowDefinition<never, unknown>;
    if (typeof def !== 'object' || def === null || typeof def.key !== 'string' || !Array.isArray(def.steps)) {
      throw new InvalidOptionsError('definition', 'expected a definition made by defineWorkflow');
    }
    if (this.#definitions.has(def.key)) throw new DuplicateWorkflowError(def.name, def.version);
    if (
      this.#runsScheduler &&
      this.#messaging === undefined &&
      def.steps.some((step) => step.kind === 'agent')
    ) {
      throw new InvalidOptionsError(
        'messaging',
        `workflow "${def.name}" has agent steps: give the engine a Messaging`,
      );
    }
    this.#definitions.add(def);
    this.#pump.pump();
    return this;
  }

  /**
   * Starts the Scheduler (done by the first `start` too): claims and runs steps of the registered workflows. Like a
   * listening server, a launched Scheduler keeps its process alive, idle or not, until `close()`.
   */
  launch(): this {
    if (this.#launched || this.#closed || !this.#runsScheduler) return this;
    this.#launched = true;
    this.#unwatch = this.store.watch(() => this.#pump.pump());
    this.#pump.start();
    return this;
  }

  /** Submits a workflow; with a Scheduler here, its first step starts at once in this process. */
  async start<O = unknown, I = unknown>(
    workflow: string | WorkflowDefinition<I, O>,
    input: I,
    options: StartOptions = {},
  ): Promise<WorkflowHandle<O>> {
    assertObject('options', options as unknown);
    const name = typeof workflow === 'string' ? workflow : workflow?.name;
    const definition = this.#definitions.find(name, options.version);
    const workflowId = options.id ?? uuidv7(this.#clock.now());
    if (typeof workflowId !== 'string' || workflowId === '' || workflowId.length > 200) {
      throw new InvalidOptionsError('id', 'expected a string of 1 to 200 characters');
    }
    const inputJson = toJson(input);
    this.launch();
    const runHere = this.#pump.reserve();
    const first = definition.steps[0] as CompiledWorkflowStep<never>;
    const submission: Submission = {
      workflowId,
      name: definition.name,
      version: definition.version,
      input: inputJson,
      now: this.#clock.now(),
      first: { stepName: first.name, timeoutMs: first.timeoutMs, maxFailures: first.maxFailures },
      ...(runHere ? { claimBy: this.schedulerId } : {}),
    };
    let submitted: Awaited<ReturnType<WorkflowStore['submit']>>;
    try {
      submitted = await this.store.submit(submission);
    } catch (error) {
      if (runHere) this.#pump.release();
      throw error;
    }
    if (!submitted.created) {
      if (runHere) this.#pump.release();
      if (submitted.existing.name !== definition.name)
        throw new WorkflowIdConflictError(workflowId, submitted.existing.name);
      return this.handle<O>(workflowId);
    }
    this.#emit({ type: 'submitted', workflowId, workflow: definition.name, version: definition.version });
    // Submitted claimed by this Scheduler: what the store holds is the first step's claim.
    if (runHere) this.#drive(definition, { ...initialState(submission), input: inputJson });
    return this.handle<O>(workflowId);
  }

  /** A handle on a workflow by id (started here or anywhere). */
  handle<O = unknown>(workflowId: string): WorkflowHandle<O> {
    return {
      id: workflowId,
      result: () => this.#waiters.wait(workflowId, this.#driving.has(workflowId)) as Promise<O>,
      status: () => this.status(workflowId),
    };
  }

  /** Sends a named signal to a workflow (the first of a name wins); false when that signal was already sent. */
  async signal(workflowId: string, name: string, payload?: unknown): Promise<boolean> {
    if (typeof name !== 'string' || name === '')
      throw new InvalidOptionsError('name', 'expected a signal name');
    if ((await this.store.get(workflowId)) === undefined) throw new WorkflowNotFoundError(workflowId);
    return this.store.signal(workflowId, name, toJson(payload), this.#clock.now());
  }

  async status(workflowId: string): Promise<WorkflowStatusView> {
    const record = await this.store.get(workflowId);
    if (record === undefined) throw new WorkflowNotFoundError(workflowId);
    return view(record);
  }

  /** Stops the Scheduler: running steps are aborted and released for another Scheduler at once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatch?.();
    this.#pump.stop();
    this.#closing.abort(new Error('the workflow engine is closing'));
    await Promise.allSettled([...this.#drives]);
    await this.#executor.close();
    this.#waiters.rejectAll();
  }

  /** For a Supervisor in this process: its alert settles local waiters at once. */
  notifyFailed(context: WorkflowFailureContext): void {
    this.#waiters.settle(context.workflowId, undefined, context);
  }

  /** Drives a workflow whose step this Scheduler holds (its slot taken), and gives the slot back after. */
  #drive(definition: WorkflowDefinition<never, unknown>, claimed: ClaimedStep): void {
    this.#driving.add(claimed.workflowId);
    const drive = driveSteps(this.#driver, definition, claimed)
      .catch((error: unknown) => this.#emit({ type: 'store-error', error }))
      .finally(() => {
        this.#driving.delete(claimed.workflowId);
        this.#drives.delete(drive);
        this.#pump.release();
      });
    this.#drives.add(drive);
  }

  #emit(detail: WorkflowEventDetail): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'workflow-engine',
      name: this.name,
      at: this.#clock.now(),
      ...detail,
    } as WorkflowEvent);
  }
}

function view(record: WorkflowRecord): WorkflowStatusView {
  const { run, state } = record;
  return {
    workflowId: run.workflowId,
    workflow: run.name,
    version: run.version,
    status: run.status,
    step: state.stepName,
    stepStatus: state.status,
    failureCount: state.failureCount,
    results: JSON.parse(state.results) as Record<string, unknown>,
    ...(run.result === null ? {} : { result: JSON.parse(run.result) as unknown }),
    ...(run.error === null ? {} : { failure: JSON.parse(run.error) as WorkflowFailureContext }),
  };
}
