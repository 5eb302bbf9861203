import diagnosticsChannel from 'node:diagnostics_channel';
import { type StratusEvent, stratusEventChannel, type Unsubscribe } from '@stratus/core';
import { httpStatusOf } from '../transient.js';

/**
 * Calls `listener` with every Stratus event of the process (all components publish on `stratusEventChannel`).
 * A listener that throws is reported as a process warning: a subscriber error on a diagnostics channel
 * would otherwise surface as an uncaught exception in the code that emitted the event.
 */
export function subscribeStratusEvents(listener: (event: StratusEvent) => void): Unsubscribe {
  const onMessage = (message: unknown): void => {
    try {
      listener(message as StratusEvent);
    } catch (error) {
      process.emitWarning(`Stratus telemetry listener threw: ${String(error)}`, 'StratusListenerWarning');
    }
  };
  diagnosticsChannel.subscribe(stratusEventChannel.name, onMessage);
  let subscribed = true;
  return () => {
    if (!subscribed) return;
    subscribed = false;
    diagnosticsChannel.unsubscribe(stratusEventChannel.name, onMessage);
  };
}

/** A JSON-safe rendering of an event field. */
export type FieldValue = string | number | boolean | FieldValue[] | { [key: string]: FieldValue };

/** The fields every event has; adapters render them on their own, the rest generically. */
const COMMON_FIELDS = new Set(['component', 'name', 'type', 'at']);

/** Nesting kept when rendering objects: enough for `cause: { error: { ... } }`. */
const MAX_DEPTH = 3;

/**
 * The event-specific fields of `event`, rendered JSON-safe: errors become `{ type, message, code?, status?,
 * stack? }`, plain objects and arrays are rendered recursively, other objects become `{ type, status? }` (a
 * response object is not dumped whole), and undefined values, functions and symbols are dropped.
 */
export function eventFields(event: StratusEvent): Record<string, FieldValue> {
  const fields: Record<string, FieldValue> = {};
  for (const key of Object.keys(event)) {
    if (COMMON_FIELDS.has(key)) continue;
    const value = renderValue((event as unknown as Record<string, unknown>)[key], 1);
    if (value !== undefined) fields[key] = value;
  }
  return fields;
}

function renderValue(value: unknown, depth: number): FieldValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return value.toString();
    case 'object':
      return value === null ? undefined : renderObject(value, depth);
    default:
      return undefined;
  }
}

function renderObject(value: object, depth: number): FieldValue | undefined {
  if (value instanceof Error) return renderError(value);
  if (depth >= MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    return value.map((item) => renderValue(item, depth + 1)).filter((item) => item !== undefined);
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) {
    const rendered: Record<string, FieldValue> = { type: value.constructor?.name ?? 'Object' };
    const status = httpStatusOf(value);
    if (status !== undefined) rendered.status = status;
    return rendered;
  }
  const rendered: Record<string, FieldValue> = {};
  for (const [key, item] of Object.entries(value)) {
    const field = renderValue(item, depth + 1);
    if (field !== undefined) rendered[key] = field;
  }
  return rendered;
}

function renderError(error: Error): Record<string, FieldValue> {
  const rendered: Record<string, FieldValue> = { type: error.name, message: error.message };
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' || typeof code === 'number') rendered.code = code;
  const status = httpStatusOf(error);
  if (status !== undefined) rendered.status = status;
  if (error.stack !== undefined) rendered.stack = error.stack;
  return rendered;
}

/**
 * Flattens rendered fields into scalar leaves with dotted keys (`cause.error.message`), the shape of
 * OpenTelemetry attributes. Stack traces and arrays are left out: attributes are for filtering, not dumps.
 */
export function flattenFields(
  fields: Record<string, FieldValue>,
  visit: (key: string, value: string | number | boolean) => void,
  prefix = '',
): void {
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'stack' || Array.isArray(value)) continue;
    if (typeof value === 'object') flattenFields(value, visit, `${prefix}${key}.`);
    else visit(`${prefix}${key}`, value);
  }
}
