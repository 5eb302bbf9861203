import { InvalidOptionsError } from './errors.js';

/** Where a backend lives, read from one configuration string (see parseBackendUrl). */
export type BackendLocation =
  | { readonly kind: 'memory' }
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly connectionString: string; readonly schema: string | undefined }
  | { readonly kind: 'redis'; readonly url: string; readonly prefix: string | undefined };

/**
 * Reads a backend URL, so deployments choose their backend by environment:
 * - `sqlite:<path>` (or a bare path ending in .db/.sqlite/.sqlite3): a database file;
 * - `postgres://…` / `postgresql://…`, with an optional `?schema=`;
 * - `redis://…` / `rediss://…`, with an optional `?prefix=` for the keys;
 * - `memory:`: this process only.
 * Throws InvalidOptionsError (option `url`) for anything else.
 */
export function parseBackendUrl(url: string): BackendLocation {
  if (typeof url !== 'string' || url.length === 0)
    throw new InvalidOptionsError('url', 'expected a backend URL');
  if (url === 'memory:' || url === 'memory') return { kind: 'memory' };
  if (url.startsWith('sqlite:'))
    return { kind: 'sqlite', path: url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') };
  if (/\.(db|sqlite3?)$/.test(url) && !url.includes('://')) return { kind: 'sqlite', path: url };
  if (/^postgres(ql)?:\/\//.test(url)) {
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    return { kind: 'postgres', connectionString: parsed.toString(), schema };
  }
  if (/^rediss?:\/\//.test(url)) {
    const parsed = new URL(url);
    const prefix = parsed.searchParams.get('prefix') ?? undefined;
    parsed.searchParams.delete('prefix');
    return { kind: 'redis', url: parsed.toString(), prefix };
  }
  throw new InvalidOptionsError(
    'url',
    `unsupported backend URL ${JSON.stringify(url)}: use sqlite:, postgres://, redis:// or memory:`,
  );
}
