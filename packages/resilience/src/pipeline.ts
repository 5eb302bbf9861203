import {
  cancelReasonOf,
  type EventEmitter,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
} from '@stratus/core';
import { contextOf, rootContext, runOperation } from './context.js';
import { EventRelay } from './event-relay.js';
import { ForwardedContext } from './forwarded-context.js';
import type { ExecuteOptions, Operation, Policy } from './policy.js';

/** The event union of a list of policies. */
export type EventsOf<P extends readonly Policy[]> = P[number] extends Policy<infer E> ? E : never;

/** Policies composed into one; itself a Policy, so it nests and registers like any other. */
export interface Pipeline<E extends StratusEvent = StratusEvent> extends Policy<E> {
  /** The composed policies, outermost first (nested pipelines flattened). */
  readonly policies: readonly Policy[];
}

/**
 * Composes `policies` so that the first is the outermost: `pipeline(timeout, retry, breaker)` times the
 * whole retried call, and the breaker sees every attempt. Nested pipelines are flattened; no policy at all
 * gives a pass-through that only honours the caller's signal.
 *
 * What the operation receives: the context of the innermost policy (its signal aborts when any layer gives
 * up), with `attempt` taken from the innermost layer that reports one other than 1, so a retry's attempt
 * number stays visible through the policies inside it.
 *
 * Each layer is linked to the next once, here; a call then costs each layer but the last one closure, and
 * the contexts are handed on as they are (an ExecuteContext is a valid ExecuteOptions), so lazily created
 * signals stay lazy until some layer reads them.
 */
export function pipeline<const P extends readonly Policy[]>(...policies: P): Pipeline<EventsOf<P>> {
  return new ComposedPipeline<EventsOf<P>>(flatten(policies));
}

/** A layer of a composed chain: runs `operation` under this layer and every layer inside it. */
type Step = <T>(operation: Operation<T>, options: ExecuteOptions | undefined, attempt: number) => Promise<T>;

class ComposedPipeline<E extends StratusEvent> implements Pipeline<E> {
  readonly name = 'pipeline';
  readonly policies: readonly Policy[];
  readonly events: EventRelay<E>;
  readonly #head: Step;

  constructor(policies: readonly Policy[]) {
    this.policies = policies;
    // A policy listed twice would otherwise deliver each of its events twice to one listener.
    this.events = new EventRelay([...new Set(policies.map((p) => p.events as EventEmitter<E>))]);
    this.#head = chain(policies);
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    return this.#head(operation, options, 1);
  }
}

function flatten(policies: readonly Policy[]): Policy[] {
  const flat: Policy[] = [];
  for (const policy of policies) {
    if (policy instanceof ComposedPipeline) flat.push(...policy.policies);
    else flat.push(policy);
  }
  return flat;
}

function chain(policies: readonly Policy[]): Step {
  const last = policies.at(-1);
  if (last === undefined) return passThrough;
  let step = lastLayer(last);
  for (let i = policies.length - 2; i >= 0; i--) step = layer(policies[i]!, step);
  return step;
}

const passThrough: Step = (operation, options) => {
  if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
  return runOperation(operation, contextOf(options));
};

function layer(policy: Policy, next: Step): Step {
  return (operation, options, attempt) =>
    policy.execute(
      (context) =>
        next(
          operation,
          // The shared no-signal context becomes "no options": inner layers then skip signal handling.
          context === rootContext ? undefined : context,
          context.attempt === 1 ? attempt : context.attempt,
        ),
      options,
    );
}

/** The innermost layer hands the operation straight to its policy unless an outer attempt must be shown. */
function lastLayer(policy: Policy): Step {
  return (operation, options, attempt) =>
    policy.execute(
      attempt === 1
        ? operation
        : (context) => operation(context.attempt === 1 ? new ForwardedContext(context, attempt) : context),
      options,
    );
}
