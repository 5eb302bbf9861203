import { assertDuration, assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import {
  MAX_PRIORITY,
  MIN_PRIORITY,
  type PriorityPolicy,
  type QueueSettings,
  type SessionDeadLetterPolicy,
} from './backend.js';
import { InvalidMessageError } from './errors.js';

/** What `createQueue` takes; every field has a default. */
export interface QueueOptions {
  /** Lock (visibility timeout) of a receive; default 30 s. */
  lockDurationMs?: number;
  /** Deliveries before a message is dead-lettered; default 10. */
  maxDeliveryCount?: number;
  /** A message id seen within this window is accepted once; default 10 min; 0 turns it off. */
  duplicateWindowMs?: number;
  /** Time-to-live of messages sent without one; default none. */
  defaultTtlMs?: number;
  /** Largest encoded body, in bytes; default 256 KiB. Larger bodies need a claim check. */
  maxMessageBytes?: number;
  /** 'strict' (default) or weighted with aging (no starvation). */
  priority?: 'strict' | PriorityPolicy;
  /** Deliver messages with the same session id in order, one at a time. Default false. */
  sessions?: boolean;
  /**
   * On a sessions queue, what a session does once one of its messages is dead-lettered (after its last delivery,
   * or by a handler), unless it expired: 'hold' (default) keeps the session's later messages waiting until the
   * dead letter is resent or purged, so the session's order is never broken; 'continue' goes on with the next one.
   */
  onSessionDeadLetter?: SessionDeadLetterPolicy;
}

export const DEFAULT_QUEUE_SETTINGS: QueueSettings = {
  lockDurationMs: 30_000,
  maxDeliveryCount: 10,
  duplicateWindowMs: 10 * 60_000,
  defaultTtlMs: undefined,
  maxMessageBytes: 256 * 1024,
  priority: { policy: 'strict' },
  sessions: false,
  onSessionDeadLetter: 'hold',
};

/** The hard ceiling of maxMessageBytes: beyond this, payloads belong in a claim check. */
export const MAX_MESSAGE_BYTES_LIMIT = 64 * 1024 * 1024;

export function queueSettings(options: QueueOptions = {}): QueueSettings {
  assertObject('options', options as unknown);
  const settings = { ...DEFAULT_QUEUE_SETTINGS };
  if (options.lockDurationMs !== undefined) {
    assertDuration('lockDurationMs', options.lockDurationMs, { allowZero: false });
    settings.lockDurationMs = options.lockDurationMs;
  }
  if (options.maxDeliveryCount !== undefined) {
    assertInteger('maxDeliveryCount', options.maxDeliveryCount, 1);
    settings.maxDeliveryCount = options.maxDeliveryCount;
  }
  if (options.duplicateWindowMs !== undefined) {
    assertDuration('duplicateWindowMs', options.duplicateWindowMs);
    settings.duplicateWindowMs = options.duplicateWindowMs;
  }
  if (options.defaultTtlMs !== undefined) {
    assertDuration('defaultTtlMs', options.defaultTtlMs, { allowZero: false });
    settings.defaultTtlMs = options.defaultTtlMs;
  }
  if (options.maxMessageBytes !== undefined) {
    assertInteger('maxMessageBytes', options.maxMessageBytes, 1, MAX_MESSAGE_BYTES_LIMIT);
    settings.maxMessageBytes = options.maxMessageBytes;
  }
  if (options.priority !== undefined) settings.priority = priorityPolicy(options.priority);
  if (options.sessions !== undefined) {
    if (typeof options.sessions !== 'boolean')
      throw new InvalidOptionsError('sessions', 'expected a boolean');
    settings.sessions = options.sessions;
  }
  if (options.onSessionDeadLetter !== undefined) {
    if (options.onSessionDeadLetter !== 'hold' && options.onSessionDeadLetter !== 'continue')
      throw new InvalidOptionsError('onSessionDeadLetter', "expected 'hold' or 'continue'");
    settings.onSessionDeadLetter = options.onSessionDeadLetter;
  }
  return settings;
}

function priorityPolicy(value: QueueOptions['priority']): PriorityPolicy {
  if (value === 'strict') return { policy: 'strict' };
  if (typeof value === 'object' && value !== null && value.policy === 'strict') return { policy: 'strict' };
  if (typeof value === 'object' && value !== null && value.policy === 'weighted') {
    assertDuration('priority.agingMs', value.agingMs, { allowZero: false });
    return { policy: 'weighted', agingMs: value.agingMs };
  }
  throw new InvalidOptionsError('priority', `expected 'strict' or { policy: 'weighted', agingMs }`);
}

/** Queue and subscription names: letters, digits and `_ . : / -`, up to 200 characters. */
const QUEUE_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,199}$/;
/** Topic names: dot-separated segments of the same characters (no wildcards). */
const TOPIC_SEGMENT = /^[A-Za-z0-9_:/-]+$/;

export function assertQueueName(name: unknown, option = 'queue'): asserts name is string {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw new InvalidOptionsError(
      option,
      `expected 1-200 characters of letters, digits and _ . : / - (not starting with . : / -), got ${JSON.stringify(name)}`,
    );
  }
}

export function assertTopicName(
  name: unknown,
  option = 'topic',
  allowWildcards = false,
): asserts name is string {
  const valid =
    typeof name === 'string' &&
    name.length <= 200 &&
    name
      .split('.')
      .every(
        (segment) => TOPIC_SEGMENT.test(segment) || (allowWildcards && (segment === '*' || segment === '#')),
      );
  if (!valid) {
    throw new InvalidOptionsError(
      option,
      `expected dot-separated segments of letters, digits and _ : / -${allowWildcards ? " (or a whole segment '*' or '#')" : ''}, got ${JSON.stringify(name)}`,
    );
  }
}

/** A lone UTF-16 surrogate: such strings cannot be encoded as UTF-8 (JSON in Redis and PostgreSQL rejects them). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function assertMessageId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 256 || LONE_SURROGATE.test(id)) {
    throw new InvalidMessageError(
      'id',
      `expected a well-formed string of 1-256 characters, got ${JSON.stringify(id)}`,
    );
  }
}

export function assertPriority(priority: unknown): asserts priority is number {
  if (
    typeof priority !== 'number' ||
    !Number.isInteger(priority) ||
    priority < MIN_PRIORITY ||
    priority > MAX_PRIORITY
  ) {
    throw new InvalidMessageError(
      'priority',
      `expected an integer ${MIN_PRIORITY}..${MAX_PRIORITY}, got ${String(priority)}`,
    );
  }
}

export function assertOptionalText(field: string, value: unknown, maxLength = 1024): void {
  if (
    value !== undefined &&
    (typeof value !== 'string' || value.length > maxLength || LONE_SURROGATE.test(value))
  ) {
    throw new InvalidMessageError(field, `expected a well-formed string of at most ${maxLength} characters`);
  }
}

export function assertHeaders(headers: unknown): asserts headers is Record<string, string> | undefined {
  if (headers === undefined) return;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw new InvalidMessageError('headers', 'expected an object of string values');
  }
  for (const [name, value] of Object.entries(headers)) {
    if (
      name.length === 0 ||
      name.length > 256 ||
      typeof value !== 'string' ||
      LONE_SURROGATE.test(name) ||
      LONE_SURROGATE.test(value)
    ) {
      throw new InvalidMessageError(
        `headers.${name}`,
        'expected a non-empty name and a string value, both well-formed',
      );
    }
  }
}
