/** A mistake in the command line: the command prints it with the usage text and exits with 2. */
export class UsageError extends Error {}
