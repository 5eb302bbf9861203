/**
 * A topic pattern (routing.ts `topicMatches`: dot-separated, `*` one segment, `#` any number of segments) as an
 * anchored PostgreSQL regular expression over `'.' || topic`. With a dot in front of every segment, `#` is simply
 * "zero or more dotted segments", so publish can match subscriptions server-side with `~ ANY (patterns)`.
 */
export function topicPatternRegex(pattern: string): string {
  const parts = pattern.split('.').map((segment) => {
    if (segment === '#') return '(\\.[^.]*)*';
    if (segment === '*') return '\\.[^.]*';
    return `\\.${segment.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&')}`;
  });
  return `^${parts.join('')}$`;
}
