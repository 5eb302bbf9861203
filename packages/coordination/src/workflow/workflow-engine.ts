/**
 * The Scheduler of the Scheduler Agent Supervisor pattern, with in-process Agents, as a library: register
 * definitions, start workflows, and every engine with its scheduler on claims pending steps from the State Store,
 * runs them (in process, or through a RemoteAgent over a queue), and records each step's outcome.
 *
 * Latency comes from doing one store round trip per step transition: a workflow started here is submitted already
 * claimed by this engine, and completing a step claims the next in the same write, so a three-step workflow costs
 * four writes and no polling. Other processes' work arrives through the store's wake-ups (LISTEN/NOTIFY, SQLite's
 * data_version, in-process callbacks) plus a timer for the next due step (durable sleeps, retry backoff).
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
  type TimerHandle,
  type Unsubscribe,
  uuidv7,
} from '@stratus/core';
import {
  type Messaging,
  RemoteRequestError,
  RequestReplyClient,
  RequestTimeoutError,
} from '@stratus/messaging';
import type {
  AgentStep,
  CompiledWorkflowStep,
  RunStep,
  SleepStep,
  WaitStep,
  WorkflowDefinition,
  WorkflowStepContext,
} from './definition.js';
import {
  DuplicateWorkflowError,
  PermanentStepError,
  SignalTimeoutError,
  StepDeadlineError,
  UnknownWorkflowError,
  WorkflowFailedError,
  WorkflowIdConflictError,
  WorkflowNotFoundError,
} from './errors.js';
import type { WorkflowEvent, WorkflowFailureContext } from './events.js';
import type { AgentRequest } from './remote-agent.js';
import type {
  ClaimedStep,
  TransitionTarget,
  WorkflowRecord,
  WorkflowStatus,
  WorkflowStore,
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

type Outcome =
  | { readonly kind: 'done'; readonly value: unknown; readonly next?: number }
  | { readonly kind: 'park'; readonly until: number; readonly signal: string | null }
  | {
      readonly kind: 'error';
      readonly error: unknown;
      readonly reason: 'error' | 'permanent' | 'signal-timeout';
    }
  | { readonly kind: 'late'; readonly error: unknown };

interface Waiter {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const stepError = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const toJson = (value: unknown): string => JSON.stringify(value === undefined ? null : value);

export class WorkflowEngine {
  readonly name: string;
  readonly schedulerId: string;
  readonly store: WorkflowStore;
  readonly events = new EventEmitter<WorkflowEvent>();
  readonly #clock: Clock;
  readonly #runsScheduler: boolean;
  readonly #concurrency: number;
  readonly #claimBatch: number;
  readonly #pollMs: number;
  readonly #resultPollMs: number;
  readonly #messaging: Messaging | undefined;
  readonly #definitions = new Map<string, WorkflowDefinition<never, unknown>>();
  readonly #latest = new Map<string, WorkflowDefinition<never, unknown>>();
  #definitionKeys: string[] = [];
  readonly #waiters = new Map<string, Waiter[]>();
  readonly #drives = new Set<Promise<void>>();
  /** Workflows this engine is driving now: their waiters are settled here, without reading the store first. */
  readonly #driving = new Set<string>();
  /** Aborts every running step when the engine closes. */
  readonly #closing = new AbortController();
  #inFlight = 0;
  #launched = false;
  #closed = false;
  #pumping = false;
  #pumpAgain = false;
  #saturated = false;
  #timer: TimerHandle | undefined;
  #unwatch: Unsubscribe | undefined;
  #replies: Promise<RequestReplyClient> | undefined;

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
    this.#concurrency = concurrency;
    this.#claimBatch = claimBatch;
    this.#pollMs = pollIntervalMs;
    this.#resultPollMs = resultPollMs;
    this.#messaging = messaging;
    // Every running step listens for the engine closing.
    setMaxListeners(0, this.#closing.signal);
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
    this.#definitions.set(def.key, def);
    const latest = this.#latest.get(def.name);
    if (latest === undefined || latest.version < def.version) this.#latest.set(def.name, def);
    this.#definitionKeys = [...this.#definitions.keys()];
    if (this.#launched) this.#pump();
    return this;
  }

  /** Starts the Scheduler (done by the first `start` too): claims and runs steps of the registered workflows. */
  launch(): this {
    if (this.#launched || this.#closed || !this.#runsScheduler) return this;
    this.#launched = true;
    this.#unwatch = this.store.watch(() => this.#pump());
    this.#pump();
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
    const definition = this.#definitionFor(name, options.version);
    const workflowId = options.id ?? uuidv7(this.#clock.now());
    if (typeof workflowId !== 'string' || workflowId === '' || workflowId.length > 200) {
      throw new InvalidOptionsError('id', 'expected a string of 1 to 200 characters');
    }
    const inputJson = toJson(input);
    this.launch();
    const runHere = this.#launched && !this.#closed && this.#inFlight < this.#concurrency;
    if (runHere) this.#inFlight++;
    const first = definition.steps[0] as CompiledWorkflowStep<never>;
    const now = this.#clock.now();
    let submitted: Awaited<ReturnType<WorkflowStore['submit']>>;
    try {
      submitted = await this.store.submit({
        workflowId,
        name: definition.name,
        version: definition.version,
        input: inputJson,
        now,
        first: { stepName: first.name, timeoutMs: first.timeoutMs, maxFailures: first.maxFailures },
        ...(runHere ? { claimBy: this.schedulerId } : {}),
      });
    } catch (error) {
      if (runHere) this.#release();
      throw error;
    }
    if (!submitted.created) {
      if (runHere) this.#release();
      if (submitted.existing.name !== definition.name)
        throw new WorkflowIdConflictError(workflowId, submitted.existing.name);
      return this.handle<O>(workflowId);
    }
    this.#emit({ type: 'submitted', workflowId, workflow: definition.name, version: definition.version });
    if (runHere) {
      this.#drive(definition, {
        workflowId,
        definition: definition.key,
        step: 0,
        stepName: first.name,
        status: 'processing',
        lockedBy: this.schedulerId,
        completeBy: now + first.timeoutMs,
        failureCount: 0,
        maxFailures: first.maxFailures,
        attempt: 1,
        timeoutMs: first.timeoutMs,
        availableAt: now,
        waitUntil: null,
        waitingFor: null,
        results: '{}',
        lastError: null,
        createdAt: now,
        updatedAt: now,
        input: inputJson,
      });
    }
    return this.handle<O>(workflowId);
  }

  /** A handle on a workflow by id (started here or anywhere). */
  handle<O = unknown>(workflowId: string): WorkflowHandle<O> {
    return {
      id: workflowId,
      result: () => this.#result(workflowId) as Promise<O>,
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
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#closing.abort(new Error('the workflow engine is closing'));
    await Promise.allSettled([...this.#drives]);
    const replies = await this.#replies?.catch(() => undefined);
    await replies?.close();
    for (const [workflowId, waiters] of this.#waiters) {
      for (const waiter of waiters) waiter.reject(new WorkflowNotFoundError(workflowId));
    }
    this.#waiters.clear();
  }

  #definitionFor(name: unknown, version: number | undefined): WorkflowDefinition<never, unknown> {
    if (typeof name !== 'string')
      throw new InvalidOptionsError('workflow', 'expected a workflow name or definition');
    if (version !== undefined) {
      if (!Number.isSafeInteger(version) || version < 1)
        throw new InvalidOptionsError('version', 'expected a positive integer');
      const found = this.#definitions.get(`${name}@${version}`);
      if (found === undefined) throw new UnknownWorkflowError(name, version);
      return found;
    }
    const found = this.#latest.get(name);
    if (found === undefined) throw new UnknownWorkflowError(name);
    return found;
  }

  #release(): void {
    this.#inFlight--;
    if (this.#saturated) this.#pump();
  }

  /** Claims what it can run now, then sleeps until the next due step, a wake-up or the safety poll. */
  #pump(): void {
    if (!this.#launched || this.#closed) return;
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    void this.#claimLoop().finally(() => {
      this.#pumping = false;
      if (this.#pumpAgain) this.#pump();
    });
  }

  async #claimLoop(): Promise<void> {
    let waitMs = this.#pollMs;
    try {
      do {
        this.#pumpAgain = false;
        this.#saturated = false;
        while (!this.#closed && this.#definitionKeys.length > 0) {
          const room = this.#concurrency - this.#inFlight;
          if (room <= 0) {
            this.#saturated = true;
            break;
          }
          const limit = Math.min(room, this.#claimBatch);
          this.#inFlight += limit;
          let claimed: ClaimedStep[];
          try {
            claimed = await this.store.claim({
              schedulerId: this.schedulerId,
              definitions: this.#definitionKeys,
              limit,
              now: this.#clock.now(),
            });
          } finally {
            this.#inFlight -= limit;
          }
          for (const step of claimed) {
            const definition = this.#definitions.get(step.definition);
            this.#inFlight++;
            if (definition !== undefined) this.#drive(definition, step);
          }
          if (claimed.length < limit) break;
        }
      } while (this.#pumpAgain && !this.#closed);
      if (this.#closed || this.#definitionKeys.length === 0) return;
      const next = await this.store.nextAvailableAt(this.#definitionKeys);
      if (next !== undefined) waitMs = Math.min(waitMs, Math.max(0, next - this.#clock.now()));
    } catch (error) {
      this.#emit({ type: 'store-error', error });
    }
    if (this.#closed) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#pump();
      },
      waitMs,
      { unref: true },
    );
  }

  #drive(definition: WorkflowDefinition<never, unknown>, claimed: ClaimedStep): void {
    this.#driving.add(claimed.workflowId);
    const drive = this.#driveSteps(definition, claimed)
      .catch((error: unknown) => this.#emit({ type: 'store-error', error }))
      .finally(() => {
        this.#driving.delete(claimed.workflowId);
        this.#drives.delete(drive);
        this.#release();
      });
    this.#drives.add(drive);
  }

  /** Runs the claimed step, records its outcome, and goes on with the next step while it claims it in that write. */
  async #driveSteps(definition: WorkflowDefinition<never, unknown>, claimed: ClaimedStep): Promise<void> {
    const input = JSON.parse(claimed.input) as never;
    const results = JSON.parse(claimed.results) as Record<string, unknown>;
    let state: ClaimedStep = claimed;
    const workflowId = state.workflowId;
    for (;;) {
      const step = definition.steps[state.step];
      if (step === undefined) return;
      const startedAt = this.#clock.monotonic();
      this.#emit({ type: 'step-started', workflowId, step: step.name, attempt: state.attempt });
      const outcome = await this.#execute(step, state, input, results);
      if (outcome.kind === 'late') {
        // The Agent missed Complete By (or the engine is closing): it returns nothing. A closing engine hands the
        // step back at once; otherwise the Supervisor finds it when Complete By has passed.
        this.#emit({
          type: 'step-failed',
          workflowId,
          step: step.name,
          attempt: state.attempt,
          reason: 'deadline',
          error: outcome.error,
        });
        if (this.#closed && this.#clock.now() <= (state.completeBy ?? 0)) {
          await this.store.transition({
            workflowId,
            attempt: state.attempt,
            now: this.#clock.now(),
            results: state.results,
            to: {
              kind: 'park',
              availableAt: this.#clock.now(),
              waitUntil: state.waitUntil ?? this.#clock.now(),
              waitingFor: state.waitingFor,
            },
          });
        }
        return;
      }
      const now = this.#clock.now();
      let to: TransitionTarget;
      let failure: WorkflowFailureContext | undefined;
      let nextStep: CompiledWorkflowStep<never> | undefined;
      if (outcome.kind === 'done') {
        results[step.name] = outcome.value === undefined ? null : outcome.value;
        nextStep = definition.steps[outcome.next ?? step.index + 1];
        if (nextStep === undefined) {
          to = { kind: 'completed', result: toJson(outcome.value) };
        } else {
          to = {
            kind: 'step',
            step: nextStep.index,
            stepName: nextStep.name,
            timeoutMs: nextStep.timeoutMs,
            maxFailures: nextStep.maxFailures,
            availableAt: now,
            ...(this.#closed ? {} : { claimBy: this.schedulerId }),
          };
        }
      } else if (outcome.kind === 'park') {
        to = {
          kind: 'park',
          availableAt: outcome.until,
          waitUntil: outcome.until,
          waitingFor: outcome.signal,
        };
      } else if (outcome.reason === 'error') {
        to = { kind: 'error', error: stepError(outcome.error) };
      } else {
        failure = {
          workflowId,
          workflow: definition.name,
          version: definition.version,
          step: step.name,
          failureCount: state.failureCount + 1,
          error: stepError(outcome.error),
          reason: outcome.reason,
        };
        to = { kind: 'failed', error: JSON.stringify(failure) };
      }
      const resultsJson = outcome.kind === 'park' ? state.results : JSON.stringify(results);
      const accepted = await this.store.transition({
        workflowId,
        attempt: state.attempt,
        now,
        results: resultsJson,
        to,
      });
      if (!accepted) {
        this.#emit({ type: 'step-superseded', workflowId, step: step.name, attempt: state.attempt });
        return;
      }
      if (outcome.kind === 'park') {
        this.#emit({
          type: 'step-waiting',
          workflowId,
          step: step.name,
          until: outcome.until,
          signal: outcome.signal,
        });
        this.#pump(); // re-arm the timer: this may now be the next due step
        return;
      }
      if (outcome.kind === 'error') {
        this.#emit({
          type: 'step-failed',
          workflowId,
          step: step.name,
          attempt: state.attempt,
          reason: outcome.reason,
          error: outcome.error,
        });
        if (failure !== undefined) {
          this.#emit({ type: 'failed', workflowId, context: failure });
          this.#settle(workflowId, undefined, failure);
        }
        return;
      }
      this.#emit({
        type: 'step-completed',
        workflowId,
        step: step.name,
        attempt: state.attempt,
        durationMs: this.#clock.monotonic() - startedAt,
      });
      if (nextStep === undefined) {
        this.#emit({ type: 'completed', workflowId, durationMs: now - state.createdAt });
        this.#settle(workflowId, outcome.value === undefined ? null : outcome.value);
        return;
      }
      if (this.#closed) return;
      state = {
        ...state,
        step: nextStep.index,
        stepName: nextStep.name,
        lockedBy: this.schedulerId,
        completeBy: now + nextStep.timeoutMs,
        failureCount: 0,
        maxFailures: nextStep.maxFailures,
        attempt: state.attempt + 1,
        timeoutMs: nextStep.timeoutMs,
        waitUntil: null,
        waitingFor: null,
        results: resultsJson,
        lastError: null,
        updatedAt: now,
      };
    }
  }

  async #execute(
    step: CompiledWorkflowStep<never>,
    state: ClaimedStep,
    input: never,
    accumulated: Record<string, unknown>,
  ): Promise<Outcome> {
    // A snapshot: a step must see only what came before it, even if it keeps the object.
    const results = Object.freeze({ ...accumulated });
    const completeBy = state.completeBy ?? this.#clock.now() + step.timeoutMs;
    const missed = (cause?: unknown) =>
      new StepDeadlineError(state.workflowId, step.name, completeBy, cause === undefined ? {} : { cause });
    const now = this.#clock.now();
    if (this.#closing.signal.aborted) return { kind: 'late', error: this.#closing.signal.reason };
    const context = (signal: AbortSignal): WorkflowStepContext<never> => ({
      workflowId: state.workflowId,
      step: step.name,
      input,
      results,
      idempotencyKey: `${state.workflowId}:${step.name}`,
      attempt: state.attempt,
      failures: state.failureCount,
      completeBy,
      signal,
    });
    switch (step.kind) {
      case 'sleep': {
        const def = step.definition as SleepStep<never>;
        if (state.waitUntil === null) {
          const until =
            def.sleepUntil !== undefined
              ? def.sleepUntil(context(this.#closing.signal))
              : now +
                (typeof def.sleepMs === 'function'
                  ? def.sleepMs(context(this.#closing.signal))
                  : (def.sleepMs ?? 0));
          if (!Number.isFinite(until))
            return {
              kind: 'error',
              error: new InvalidOptionsError('sleep', 'not a time'),
              reason: 'permanent',
            };
          return until <= now ? { kind: 'done', value: null } : { kind: 'park', until, signal: null };
        }
        return now >= state.waitUntil
          ? { kind: 'done', value: null }
          : { kind: 'park', until: state.waitUntil, signal: null };
      }
      case 'wait': {
        const def = step.definition as WaitStep;
        const payload = await this.store.readSignal(state.workflowId, def.waitFor);
        if (payload !== undefined) return { kind: 'done', value: JSON.parse(payload) };
        const until = state.waitUntil ?? now + def.waitMs;
        if (now < until) return { kind: 'park', until, signal: def.waitFor };
        if (step.timeoutGoto !== undefined) return { kind: 'done', value: null, next: step.timeoutGoto };
        return {
          kind: 'error',
          error: new SignalTimeoutError(step.name, def.waitFor),
          reason: 'signal-timeout',
        };
      }
      case 'run':
        return this.#withDeadline(completeBy, missed, (signal) =>
          (step.definition as RunStep<never>).run(context(signal)),
        );
      case 'agent':
        return this.#withDeadline(completeBy, missed, async (signal) => {
          const replies = await this.#replyClient();
          const request: AgentRequest = {
            workflowId: state.workflowId,
            step: step.name,
            input,
            results,
            idempotencyKey: `${state.workflowId}:${step.name}`,
            attempt: state.attempt,
            failures: state.failureCount,
            completeBy,
          };
          return replies.request((step.definition as AgentStep).agent, request, {
            timeoutMs: Math.max(1, completeBy - this.#clock.now()),
            signal,
            id: `${state.workflowId}:${step.name}:${state.attempt}`,
          });
        });
    }
  }

  /**
   * Runs `work` with a signal that aborts at Complete By with the `missed` error (or at engine close); past it, the
   * result is dropped.
   */
  async #withDeadline(
    completeBy: number,
    missed: (cause?: unknown) => StepDeadlineError,
    work: (signal: AbortSignal) => unknown,
  ): Promise<Outcome> {
    const controller = new AbortController();
    const onClose = () => controller.abort(this.#closing.signal.reason);
    this.#closing.signal.addEventListener('abort', onClose, { once: true });
    let timer: TimerHandle | undefined;
    const deadline = new Promise<Outcome>((resolve) => {
      const fire = () => resolve({ kind: 'late', error: controller.signal.reason });
      controller.signal.addEventListener('abort', fire, { once: true });
      timer = this.#clock.setTimeout(
        () => controller.abort(missed()),
        Math.max(0, completeBy - this.#clock.now()),
      );
    });
    const running = (async (): Promise<Outcome> => {
      try {
        return { kind: 'done', value: await work(controller.signal) };
      } catch (error) {
        // An agent's reply times out at Complete By.
        if (error instanceof RequestTimeoutError) return { kind: 'late', error: missed(error) };
        if (error instanceof PermanentStepError) return { kind: 'error', error, reason: 'permanent' };
        if (error instanceof RemoteRequestError)
          return { kind: 'error', error: new Error(error.remoteMessage), reason: 'error' };
        return { kind: 'error', error, reason: 'error' };
      }
    })();
    try {
      const outcome = await Promise.race([running, deadline]);
      if (controller.signal.aborted || this.#clock.now() > completeBy) {
        return { kind: 'late', error: controller.signal.reason ?? missed() };
      }
      return outcome;
    } finally {
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      this.#closing.signal.removeEventListener('abort', onClose);
    }
  }

  #replyClient(): Promise<RequestReplyClient> {
    this.#replies ??= new RequestReplyClient(this.#messaging as Messaging).start();
    return this.#replies;
  }

  #result(workflowId: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      let waiters = this.#waiters.get(workflowId);
      if (waiters === undefined) {
        waiters = [];
        this.#waiters.set(workflowId, waiters);
      }
      waiters.push(waiter);
      // Finished elsewhere (another process, the Supervisor): the store says so.
      const check = async () => {
        if (!this.#waiters.get(workflowId)?.includes(waiter)) return;
        try {
          const record = await this.store.get(workflowId);
          if (record === undefined) {
            this.#drop(workflowId, waiter);
            reject(new WorkflowNotFoundError(workflowId));
            return;
          }
          if (record.run.status === 'completed') {
            this.#drop(workflowId, waiter);
            resolve(JSON.parse(record.run.result ?? 'null'));
            return;
          }
          if (record.run.status === 'failed') {
            this.#drop(workflowId, waiter);
            const context = JSON.parse(record.run.error ?? 'null') as WorkflowFailureContext | null;
            reject(new WorkflowFailedError(workflowId, context?.error ?? 'unknown', context));
            return;
          }
        } catch (error) {
          this.#emit({ type: 'store-error', error });
        }
        if (!this.#closed) this.#clock.setTimeout(() => void check(), this.#resultPollMs, { unref: true });
      };
      if (this.#driving.has(workflowId))
        this.#clock.setTimeout(() => void check(), this.#resultPollMs, { unref: true });
      else void check();
    });
  }

  #drop(workflowId: string, waiter: Waiter): void {
    const waiters = this.#waiters.get(workflowId);
    if (waiters === undefined) return;
    const left = waiters.filter((w) => w !== waiter);
    if (left.length === 0) this.#waiters.delete(workflowId);
    else this.#waiters.set(workflowId, left);
  }

  /** Settles local waiters of a workflow this process just finished. */
  #settle(workflowId: string, value: unknown, failure?: WorkflowFailureContext): void {
    const waiters = this.#waiters.get(workflowId);
    if (waiters === undefined) return;
    this.#waiters.delete(workflowId);
    for (const waiter of waiters) {
      if (failure === undefined) waiter.resolve(value);
      else waiter.reject(new WorkflowFailedError(workflowId, failure.error, failure));
    }
  }

  /** For a Supervisor in this process: its alert settles local waiters at once. */
  notifyFailed(context: WorkflowFailureContext): void {
    this.#settle(context.workflowId, undefined, context);
  }

  #emit(detail: DistributiveOmit<WorkflowEvent, 'component' | 'name' | 'at'>): void {
    if (!this.events.active) return;
    this.events.emit({
      component: 'workflow-engine',
      name: this.name,
      at: this.#clock.now(),
      ...detail,
    } as WorkflowEvent);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

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
