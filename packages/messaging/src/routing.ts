import type { HeaderCondition, MessageFilter, MessageProperties, Subscription } from './backend.js';

/**
 * Topic patterns are dot-separated: `*` matches exactly one segment, `#` any number of segments (also none), as in
 * AMQP topic exchanges.
 */
export function topicMatches(pattern: string, topic: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('#')) return pattern === topic;
  return segmentsMatch(pattern.split('.'), 0, topic.split('.'), 0);
}

function segmentsMatch(pattern: string[], i: number, topic: string[], j: number): boolean {
  if (i === pattern.length) return j === topic.length;
  const segment = pattern[i];
  if (segment === '#') {
    return (
      segmentsMatch(pattern, i + 1, topic, j) || (j < topic.length && segmentsMatch(pattern, i, topic, j + 1))
    );
  }
  if (j === topic.length) return false;
  return (segment === '*' || segment === topic[j]) && segmentsMatch(pattern, i + 1, topic, j + 1);
}

function headerMatches(value: string | undefined, condition: HeaderCondition): boolean {
  if (typeof condition === 'string') return value === condition;
  if (Array.isArray(condition)) return value !== undefined && condition.includes(value);
  if ('exists' in condition) return (value !== undefined) === condition.exists;
  return value?.startsWith((condition as { prefix: string }).prefix) === true;
}

export function filterMatches(filter: MessageFilter | undefined, message: MessageProperties): boolean {
  if (filter === undefined) return true;
  if (filter.subject !== undefined) {
    const subjects = typeof filter.subject === 'string' ? [filter.subject] : filter.subject;
    if (message.subject === undefined || !subjects.includes(message.subject)) return false;
  }
  if (filter.headers !== undefined) {
    for (const [name, condition] of Object.entries(filter.headers)) {
      if (!headerMatches(message.headers?.[name], condition)) return false;
    }
  }
  return true;
}

export function subscriptionMatches(
  subscription: Subscription,
  topic: string,
  message: MessageProperties,
): boolean {
  return (
    subscription.topics.some((pattern) => topicMatches(pattern, topic)) &&
    filterMatches(subscription.filter, message)
  );
}
