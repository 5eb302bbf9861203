/**
 * Workflow definitions as code: an ordered list of named steps, registered by name and version. A step is one of
 * - `run`: an async function run in process (an in-process Agent);
 * - `agent`: the name of a queue a RemoteAgent serves (request/reply over messaging);
 * - `sleepMs` / `sleepUntil`: a durable timer (the wake time is stored, so it survives restarts);
 * - `waitFor`: a named external signal, with a deadline after which the step fails or jumps to `onTimeout.goto`.
 */
import { InvalidWorkflowDefinitionError } from './errors.js';

/** What a step's function gets. */
export interface WorkflowStepContext<I = unknown> {
  readonly workflowId: string;
  readonly step: string;
  readonly input: I;
  /** Results of the steps that ran before this one, by step name. */
  readonly results: Readonly<Record<string, unknown>>;
  /** `<workflowId>:<step>`: the same for every attempt, so an effect store that checks it applies effects once. */
  readonly idempotencyKey: string;
  /** The claim's fencing number: it grows with every claim of any step of the workflow. */
  readonly attempt: number;
  /** Failures of this step so far (0 on the first try). */
  readonly failures: number;
  /** Epoch ms by which the step must finish; `signal` aborts then. */
  readonly completeBy: number;
  /** Aborts at Complete By or when the engine closes: stop, and return nothing. */
  readonly signal: AbortSignal;
}

interface StepCommon {
  readonly name: string;
  /** Complete By budget of one attempt; default the definition's `stepTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Failures (timeouts included) after which the Supervisor fails the workflow; default the definition's. */
  readonly maxFailures?: number;
}

export interface RunStep<I> extends StepCommon {
  run(context: WorkflowStepContext<I>): unknown;
}
export interface AgentStep extends StepCommon {
  /** The queue a RemoteAgent serves; the request carries the step context (without signal) and Complete By. */
  readonly agent: string;
}
export interface SleepStep<I> extends StepCommon {
  readonly sleepMs?: number | ((context: WorkflowStepContext<I>) => number);
  /** The epoch ms to wake at. */
  readonly sleepUntil?: (context: WorkflowStepContext<I>) => number;
}
export interface WaitStep extends StepCommon {
  /** The signal's name (see `engine.signal`); its payload becomes the step's result. */
  readonly waitFor: string;
  /** How long to wait for it, from when the step starts waiting. */
  readonly waitMs: number;
  /** What happens at the deadline: fail the step (default, no retries) or go on at a later step. */
  readonly onTimeout?: 'fail' | { readonly goto: string };
}

export type StepDefinition<I = unknown> = RunStep<I> | AgentStep | SleepStep<I> | WaitStep;

export interface WorkflowDefinitionInput<I = unknown> {
  readonly name: string;
  /** Default 1. Runs keep the version they started with; register old versions until their runs end. */
  readonly version?: number;
  readonly steps: readonly StepDefinition<I>[];
  /** Default Complete By budget of a step; default 30 s. */
  readonly stepTimeoutMs?: number;
  /** Default failure threshold of a step; default 3. */
  readonly maxFailures?: number;
}

export type StepKind = 'run' | 'agent' | 'sleep' | 'wait';

export interface CompiledWorkflowStep<I = unknown> {
  readonly index: number;
  readonly name: string;
  readonly kind: StepKind;
  readonly timeoutMs: number;
  readonly maxFailures: number;
  readonly definition: StepDefinition<I>;
  /** For a wait step with a timeout branch: the index to go on at. */
  readonly timeoutGoto?: number;
}

export interface WorkflowDefinition<I = unknown, O = unknown> {
  readonly name: string;
  readonly version: number;
  /** `<name>@<version>`, what the state record keeps. */
  readonly key: string;
  readonly steps: readonly CompiledWorkflowStep<I>[];
  /** Phantom: the output type (the last step's result). */
  readonly __output?: O;
}

const NAME = /^[A-Za-z0-9_.:/-]{1,200}$/;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function stepKind(step: StepDefinition<unknown>): StepKind | string {
  const s = step as Partial<RunStep<unknown> & AgentStep & SleepStep<unknown> & WaitStep>;
  const kinds: StepKind[] = [];
  if (s.run !== undefined) kinds.push('run');
  if (s.agent !== undefined) kinds.push('agent');
  if (s.sleepMs !== undefined || s.sleepUntil !== undefined) kinds.push('sleep');
  if (s.waitFor !== undefined) kinds.push('wait');
  if (kinds.length !== 1) return 'expected exactly one of run, agent, sleepMs/sleepUntil, waitFor';
  return kinds[0] as StepKind;
}

function positiveMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_TIMEOUT_MS;
}

/** Checks a definition and compiles it; throws InvalidWorkflowDefinitionError on the first problem. */
export function defineWorkflow<I = unknown, O = unknown>(
  input: WorkflowDefinitionInput<I>,
): WorkflowDefinition<I, O> {
  if (typeof input !== 'object' || input === null) {
    throw new InvalidWorkflowDefinitionError('?', 'expected an object');
  }
  const { name, version = 1, steps, stepTimeoutMs = 30_000, maxFailures = 3 } = input;
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new InvalidWorkflowDefinitionError(
      String(name),
      'name: expected 1 to 200 of A-Z a-z 0-9 _ . : / -',
    );
  }
  const fail = (reason: string): never => {
    throw new InvalidWorkflowDefinitionError(name, reason);
  };
  if (!Number.isSafeInteger(version) || version < 1) fail('version: expected a positive integer');
  if (!positiveMs(stepTimeoutMs)) fail('stepTimeoutMs: expected a positive number of ms');
  if (!Number.isSafeInteger(maxFailures) || maxFailures < 1) fail('maxFailures: expected an integer >= 1');
  if (!Array.isArray(steps) || steps.length === 0) fail('steps: expected a non-empty array');
  const names = new Map<string, number>();
  for (const [index, step] of steps.entries()) {
    if (typeof step !== 'object' || step === null) fail(`steps[${index}]: expected an object`);
    if (typeof step.name !== 'string' || !NAME.test(step.name)) {
      fail(`steps[${index}].name: expected 1 to 200 of A-Z a-z 0-9 _ . : / -`);
    }
    if (names.has(step.name)) fail(`steps[${index}]: the name "${step.name}" is used twice`);
    names.set(step.name, index);
  }
  const compiled = steps.map((step, index): CompiledWorkflowStep<I> => {
    const where = `step "${step.name}"`;
    const kind = stepKind(step as StepDefinition<unknown>);
    if (kind !== 'run' && kind !== 'agent' && kind !== 'sleep' && kind !== 'wait') fail(`${where}: ${kind}`);
    const timeoutMs = step.timeoutMs ?? stepTimeoutMs;
    if (!positiveMs(timeoutMs)) fail(`${where}: timeoutMs: expected a positive number of ms`);
    const stepMaxFailures = step.maxFailures ?? maxFailures;
    if (!Number.isSafeInteger(stepMaxFailures) || stepMaxFailures < 1) {
      fail(`${where}: maxFailures: expected an integer >= 1`);
    }
    let timeoutGoto: number | undefined;
    if (kind === 'run' && typeof (step as RunStep<I>).run !== 'function')
      fail(`${where}: run: expected a function`);
    if (
      kind === 'agent' &&
      (typeof (step as AgentStep).agent !== 'string' || (step as AgentStep).agent === '')
    ) {
      fail(`${where}: agent: expected a queue name`);
    }
    if (kind === 'sleep') {
      const { sleepMs, sleepUntil } = step as SleepStep<I>;
      if (sleepMs !== undefined && sleepUntil !== undefined)
        fail(`${where}: give sleepMs or sleepUntil, not both`);
      if (
        sleepMs !== undefined &&
        typeof sleepMs !== 'function' &&
        !(typeof sleepMs === 'number' && sleepMs >= 0 && Number.isFinite(sleepMs))
      ) {
        fail(`${where}: sleepMs: expected a number of ms >= 0 or a function`);
      }
      if (sleepUntil !== undefined && typeof sleepUntil !== 'function')
        fail(`${where}: sleepUntil: expected a function`);
    }
    if (kind === 'wait') {
      const { waitFor, waitMs, onTimeout = 'fail' } = step as WaitStep;
      if (typeof waitFor !== 'string' || !NAME.test(waitFor))
        fail(`${where}: waitFor: expected a signal name`);
      if (!positiveMs(waitMs)) fail(`${where}: waitMs: expected a positive number of ms`);
      if (onTimeout !== 'fail') {
        const target =
          typeof onTimeout === 'object' && onTimeout !== null ? names.get(onTimeout.goto) : undefined;
        if (target === undefined || target <= index) {
          fail(`${where}: onTimeout: expected 'fail' or { goto: <the name of a later step> }`);
        }
        timeoutGoto = target;
      }
    }
    return {
      index,
      name: step.name,
      kind: kind as StepKind,
      timeoutMs,
      maxFailures: stepMaxFailures,
      definition: step,
      ...(timeoutGoto === undefined ? {} : { timeoutGoto }),
    };
  });
  return { name, version, key: `${name}@${version}`, steps: compiled };
}
