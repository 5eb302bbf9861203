/**
 * The sites' cookies: read from the Cookie header, written HttpOnly (no script reads them) and SameSite=Lax (another
 * site's forms cannot post with them), Secure when the request came over HTTPS.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The value of cookie `name` of the request (the first, should it come twice). */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** Sets cookie `name` for `path` and below, for `maxAgeSeconds` (0 deletes it). */
export function setCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  cookie: {
    readonly name: string;
    readonly value: string;
    readonly path: string;
    readonly maxAgeSeconds: number;
  },
): void {
  const secure = request.protocol === 'https' ? '; Secure' : '';
  void reply.header(
    'set-cookie',
    `${cookie.name}=${cookie.value}; Path=${cookie.path}; Max-Age=${cookie.maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`,
  );
}
