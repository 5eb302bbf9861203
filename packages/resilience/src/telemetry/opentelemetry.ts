import {
  type Attributes,
  type Counter,
  type Histogram,
  type MeterProvider,
  metrics,
  type ObservableResult,
  type Span,
  type SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import {
  assertFunction,
  assertObject,
  cancelReasonOf,
  EventEmitter,
  InvalidOptionsError,
  isCancelled,
  OperationCancelledError,
  type StratusEvent,
} from '@stratus/core';
import { contextOf } from '../context.js';
import type { ExecuteContext, ExecuteOptions, Operation, Policy } from '../policy.js';
import { eventFields, flattenFields, subscribeStratusEvents } from './event-fields.js';

/** The instrumentation scope of every meter and tracer this module asks for. */
const SCOPE = '@stratus/resilience';

/** Fields left out of metric attributes by default: their values are unbounded (tenant keys, partitions). */
const UNBOUNDED_FIELDS = new Set(['key', 'partition']);

export interface OpenTelemetryOptions {
  /** Default: the global meter provider. */
  meterProvider?: MeterProvider;
  /** For `traced()`; default: the global tracer provider. */
  tracerProvider?: TracerProvider;
  /** Add every event to the active span, if one is recording; default true. */
  spanEvents?: boolean;
  /**
   * Which top-level string and boolean fields of events become metric attributes (as `stratus.<field>`).
   * Default: all but `key` and `partition`, whose values are unbounded.
   */
  metricAttribute?: (field: string) => boolean;
}

export interface StratusInstrumentation {
  /** A tracing policy on this instrumentation's tracer provider. */
  traced(spanName: string, options?: Omit<TracedOptions, 'tracerProvider'>): TracedPolicy;
  /** Stops observing events and reporting state. */
  dispose(): void;
}

/**
 * Reports every Stratus event of the process to OpenTelemetry, from the diagnostics channel, so every policy
 * (including kinds added later) is covered without wiring:
 * - `stratus.resilience.events` counter, by `stratus.component`, `stratus.name`, `stratus.event` and the
 *   event's own string/boolean fields (`stratus.reason`, `stratus.to`, ...);
 * - one histogram per duration field, by the convention that a numeric field named `*Ms` is a duration:
 *   `delayMs` → `stratus.resilience.delay`, `durationMs` → `stratus.resilience.duration` (unit ms);
 * - `stratus.resilience.state` gauge, from events that carry a `from`/`to` transition (breakers): 1 for
 *   the state each component is in, 0 for the states it has left;
 * - span events: each event is added to the active span, with all its fields as attributes.
 */
export function instrumentOpenTelemetry(options: OpenTelemetryOptions = {}): StratusInstrumentation {
  assertObject('options', options as unknown);
  const {
    tracerProvider,
    spanEvents = true,
    metricAttribute = (field) => !UNBOUNDED_FIELDS.has(field),
  } = options;
  assertFunction('metricAttribute', metricAttribute);
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
  const counter = meter.createCounter('stratus.resilience.events', {
    description: 'Events of Stratus resilience components',
    unit: '{event}',
  });
  const histograms = new Map<string, Histogram>();
  const histogram = (field: string): Histogram => {
    let instrument = histograms.get(field);
    if (instrument === undefined) {
      instrument = meter.createHistogram(durationMetricName(field), {
        description: `The ${field} of Stratus events`,
        unit: 'ms',
      });
      histograms.set(field, instrument);
    }
    return instrument;
  };
  const states = new StateBoard();
  const gauge = meter.createObservableGauge('stratus.resilience.state', {
    description: 'Stratus component state: 1 for the current state, 0 for states left',
  });
  const observe = (result: ObservableResult) => states.observe(result);
  gauge.addCallback(observe);

  const unsubscribe = subscribeStratusEvents((event) => {
    record(event, counter, histogram, metricAttribute);
    states.update(event);
    if (spanEvents) addSpanEvent(event);
  });
  return {
    traced: (spanName, tracedOptions = {}) => traced(spanName, { ...tracedOptions, tracerProvider }),
    dispose() {
      unsubscribe();
      gauge.removeCallback(observe);
    },
  };
}

function baseAttributes(event: StratusEvent): Attributes {
  return { 'stratus.component': event.component, 'stratus.name': event.name, 'stratus.event': event.type };
}

function record(
  event: StratusEvent,
  counter: Counter,
  histogram: (field: string) => Histogram,
  metricAttribute: (field: string) => boolean,
): void {
  const base = baseAttributes(event);
  const attributes: Attributes = { ...base };
  const fields = event as unknown as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (key === 'component' || key === 'name' || key === 'type' || key === 'at') continue;
    const value = fields[key];
    if ((typeof value === 'string' || typeof value === 'boolean') && metricAttribute(key)) {
      attributes[`stratus.${key}`] = value;
    } else if (typeof value === 'number' && Number.isFinite(value) && isDurationField(key)) {
      histogram(key).record(value, base);
    }
  }
  counter.add(1, attributes);
}

function isDurationField(key: string): boolean {
  return key.length > 2 && key.endsWith('Ms');
}

/** `retryAfterMs` → `stratus.resilience.retry_after`. */
function durationMetricName(field: string): string {
  const stem = field.slice(0, -2).replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
  return `stratus.resilience.${stem}`;
}

interface ComponentState {
  readonly attributes: Attributes;
  current: string;
  readonly seen: Set<string>;
}

/** The last known state of every component that reported a transition. */
class StateBoard {
  readonly #components = new Map<string, ComponentState>();

  update(event: StratusEvent): void {
    const { from, to } = event as { from?: unknown; to?: unknown };
    if (typeof from !== 'string' || typeof to !== 'string') return;
    const id = `${event.component}\u0000${event.name}`;
    let state = this.#components.get(id);
    if (state === undefined) {
      state = {
        attributes: { 'stratus.component': event.component, 'stratus.name': event.name },
        current: to,
        seen: new Set([from]),
      };
      this.#components.set(id, state);
    }
    state.current = to;
    state.seen.add(to);
  }

  observe(result: ObservableResult): void {
    for (const { attributes, current, seen } of this.#components.values()) {
      for (const state of seen)
        result.observe(state === current ? 1 : 0, { ...attributes, 'stratus.state': state });
    }
  }
}

function addSpanEvent(event: StratusEvent): void {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return;
  const attributes = baseAttributes(event);
  flattenFields(eventFields(event), (key, value) => {
    attributes[`stratus.${key}`] = value;
  });
  span.addEvent(`stratus.${event.component}.${event.type}`, attributes, event.at);
}

export interface TracedOptions {
  /** Default: the global tracer provider. */
  tracerProvider?: TracerProvider;
  /** Set on every span. */
  attributes?: Attributes;
  kind?: SpanKind;
  /** The policy's name; default 'traced'. */
  name?: string;
}

/** A policy that emits no events of its own: it makes the spans other policies' events land on. */
export interface TracedPolicy extends Policy<never> {
  readonly spanName: string;
}

/**
 * Runs each call inside a new active span named `spanName`: events of the policies inside it land on that
 * span (with `instrumentOpenTelemetry`), and a call that fails records the exception and an error status.
 * Put it outermost for one span per call, or inside a retry for one span per attempt (the span then gets
 * `stratus.attempt`).
 */
export function traced(spanName: string, options: TracedOptions = {}): TracedPolicy {
  return new Traced(spanName, options);
}

class Traced implements TracedPolicy {
  readonly name: string;
  readonly spanName: string;
  readonly events = new EventEmitter<never>();
  readonly #tracer: Tracer;
  readonly #spanOptions: { attributes?: Attributes; kind?: SpanKind };

  constructor(spanName: string, options: TracedOptions) {
    if (typeof spanName !== 'string' || spanName === '') {
      throw new InvalidOptionsError('spanName', 'expected a non-empty string');
    }
    assertObject('options', options as unknown);
    if (options.attributes !== undefined) assertObject('attributes', options.attributes as unknown);
    this.spanName = spanName;
    this.name = options.name ?? 'traced';
    this.#tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
    this.#spanOptions = { attributes: options.attributes, kind: options.kind };
  }

  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T> {
    if (isCancelled(options)) return Promise.reject(new OperationCancelledError(cancelReasonOf(options)));
    return this.#tracer.startActiveSpan(this.spanName, this.#spanOptions, (span) =>
      runInSpan(span, operation, contextOf(options)),
    );
  }
}

async function runInSpan<T>(span: Span, operation: Operation<T>, context: ExecuteContext): Promise<T> {
  if (context.attempt !== 1) span.setAttribute('stratus.attempt', context.attempt);
  try {
    return await operation(context);
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
    throw error;
  } finally {
    span.end();
  }
}
