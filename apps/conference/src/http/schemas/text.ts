/**
 * The rules of text input, the same on every route and form: every text field has a length limit (in characters,
 * that is Unicode code points) and a character rule. A single-line field takes no control character (C0, DEL, C1);
 * a multi-line one only tabs and line breaks among them; no field takes an unpaired UTF-16 surrogate, which JSON can
 * carry. So every backend stores what was accepted (PostgreSQL stores neither NUL nor an unpaired surrogate) and
 * every page shows it as it was written.
 */
import {
  RESERVED_SLUGS,
  SLUG_CHARACTERS,
  SLUG_CHARACTERS_MESSAGE,
  SLUG_MAX_LENGTH,
} from '../../domain/slug.js';
import type { JsonSchema } from './json-schema.js';

/** The lengths of the text fields (README: Input rules). */
export const TEXT_LIMITS = {
  /** A conference's name, location, Twitter search; a person's first and last name. */
  name: 100,
  tagline: 200,
  /** A conference's description, the only multi-line field. */
  description: 2_000,
  /** RFC 5321's limit on an address. */
  email: 254,
  /** The domain's own limits on a seat type. */
  seatName: 70,
  seatDescription: 250,
  /** Owner and order access codes (6 characters today). */
  accessCode: 32,
  /** An order's token, as the registration form carries it for a new order (43 characters today). */
  orderToken: 64,
  seatTypeId: 64,
} as const;

// Character classes written with escapes, so that the OpenAPI document shows them as such.
const SINGLE_LINE = '^[^\\u0000-\\u001f\\u007f-\\u009f\\ud800-\\udfff]*$';
const MULTI_LINE = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\ud800-\\udfff]*$';

const SLUG_LOOKUP = '^[\\w-]*$';
const SLUG_LOOKUP_MAX_LENGTH = 100;

/** What the failure of a pattern says, by pattern (the label names the field). */
export const PATTERN_MESSAGES: Readonly<Record<string, (label: string) => string>> = {
  [SINGLE_LINE]: (label) =>
    `${label} must be one line of text, without control characters or unpaired surrogates.`,
  [MULTI_LINE]: (label) =>
    `${label} must be text without control characters (but tabs and line breaks) or unpaired surrogates.`,
  [SLUG_CHARACTERS.source]: () => SLUG_CHARACTERS_MESSAGE,
  [SLUG_LOOKUP]: (label) => `${label} can only contain letters, digits, hyphens and underscores.`,
};

const described = (schema: JsonSchema, description: string | undefined): JsonSchema =>
  description === undefined ? schema : { ...schema, description };

/** One line of text, at most `maxLength` characters. */
export const line = (maxLength: number, description?: string): JsonSchema =>
  described({ type: 'string', maxLength, pattern: SINGLE_LINE }, description);

/** Text that may span lines, at most `maxLength` characters. */
export const lines = (maxLength: number, description?: string): JsonSchema =>
  described({ type: 'string', maxLength, pattern: MULTI_LINE }, description);

export const email: JsonSchema = line(TEXT_LIMITS.email, 'An e-mail address.');

export const slug: JsonSchema = {
  type: 'string',
  maxLength: SLUG_MAX_LENGTH,
  pattern: SLUG_CHARACTERS.source,
  description:
    `1 to ${SLUG_MAX_LENGTH} lowercase letters, digits, hyphens and underscores, unique among conferences; ` +
    `not ${RESERVED_SLUGS.join(', ')}.`,
};

/**
 * A slug as the lookups take it (a path segment, the owner's sign-in form): any slug the system accepts, or accepted
 * before the rule above (letters of either case, digits and underscores, up to 100).
 */
export const slugLookup: JsonSchema = {
  type: 'string',
  maxLength: SLUG_LOOKUP_MAX_LENGTH,
  pattern: SLUG_LOOKUP,
  description: "A conference's slug (its code in the sites' URLs).",
};

/** Whether a path segment may name a conference (slugLookup). Anything else is simply not found, unread. */
export function isSlugParam(value: string | undefined): value is string {
  return (
    value !== undefined &&
    value !== '' &&
    value.length <= SLUG_LOOKUP_MAX_LENGTH &&
    new RegExp(SLUG_LOOKUP).test(value)
  );
}
