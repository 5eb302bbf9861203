/**
 * A conference's slug, its code in the sites' URLs (`/{slug}`, `/manage/{slug}`): 1 to 50 lowercase letters, digits,
 * hyphens and underscores, so that it fits any URL and the stream that claims it, and reads the same in every case.
 * The first path segments of the sites themselves, and the owner site's own pages under `/manage/`, are reserved (a
 * conference there could not be reached).
 */

export const SLUG_MAX_LENGTH = 50;

/** The characters of a slug (blank and length are checked apart, each with its own message). */
export const SLUG_CHARACTERS = /^[a-z0-9_-]*$/;

export const SLUG_CHARACTERS_MESSAGE =
  'The slug can only contain lowercase letters, digits, hyphens and underscores.';

/** First path segments that the sites, the API and the operations endpoints use, then the owner site's pages. */
export const RESERVED_SLUGS: readonly string[] = [
  'api',
  'manage',
  'payment',
  'health',
  'metrics',
  'create',
  'locate',
  'sign-in',
];

/** What is wrong with a slug, if anything. */
export function slugProblem(slug: unknown): string | undefined {
  if (typeof slug !== 'string' || slug.trim() === '') return 'The slug field is required.';
  if (slug.length > SLUG_MAX_LENGTH) return `The slug must be at most ${SLUG_MAX_LENGTH} characters long.`;
  if (!SLUG_CHARACTERS.test(slug)) return SLUG_CHARACTERS_MESSAGE;
  if (RESERVED_SLUGS.includes(slug)) return `The slug cannot be ${slug}: the sites use that path.`;
  return undefined;
}
