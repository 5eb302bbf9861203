import type { PersonalInfo } from './contracts.js';
import { ValidationError } from './errors.js';

/** A run of .NET word characters (Unicode letters, marks, digits, connectors) or dashes. */
const WORD = '[\\p{L}\\p{Mn}\\p{Nd}\\p{Pc}-]+';

/**
 * The Journey's email rule `[\w-]+(\.?[\w-])*@[\w-]+(\.[\w-]+)+` on the whole string, written without its nested
 * quantifier: the same addresses, without the catastrophic backtracking on a long near-miss.
 */
export const EMAIL_PATTERN = new RegExp(`^${WORD}(?:\\.${WORD})*@${WORD}(?:\\.${WORD})+$`, 'u');

/** Every missing name and the missing or malformed email, by field (empty when none). */
export function personalInfoProblems({ firstName, lastName, email }: PersonalInfo): Record<string, string> {
  const fields: Record<string, string> = {};
  if (isBlank(firstName)) fields.firstName = 'The first name is required.';
  if (isBlank(lastName)) fields.lastName = 'The last name is required.';
  if (isBlank(email)) fields.email = 'The email address is required.';
  else if (!EMAIL_PATTERN.test(email)) fields.email = 'The provided email address is not valid.';
  return fields;
}

/** Throws a ValidationError naming every missing name and the missing or malformed email. */
export function assertValidPersonalInfo(info: PersonalInfo): void {
  const fields = personalInfoProblems(info);
  if (Object.keys(fields).length > 0) throw new ValidationError(fields);
}

function isBlank(value: string): boolean {
  return typeof value !== 'string' || value.trim() === '';
}
