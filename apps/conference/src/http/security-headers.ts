/**
 * Security headers on every response, from one onRequest hook (the few fields needed, each chosen here, rather than a
 * dependency). Scripts and styles run only if they are the pages' own inline countdown script and stylesheet (allowed
 * by their hashes, so no 'unsafe-inline'); nothing else loads, forms post only to this site, no page can be framed
 * (clickjacking); browsers neither sniff content types nor send a referrer, since owner URLs carry the access code;
 * caches never store an API answer, which carries orders, registrants and access codes.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { COUNTDOWN_SCRIPT, CSS } from './pages/layout.js';

/** A CSP source allowing exactly the inline element whose content is `text`. */
function hashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src ${hashSource(COUNTDOWN_SCRIPT)}`,
  `style-src ${hashSource(CSS)}`,
  "img-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/** Adds the hook to `app` itself (not encapsulated): every route, 404 and error answer gets the headers. */
export function securityHeaders(app: FastifyInstance): void {
  // Set as the request arrives (a route may still replace cache-control): an onSend hook, and an async one at
  // that, cost every answer a pass through Fastify's send hooks.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.headers(HEADERS);
    if (request.url.startsWith('/api/')) void reply.header('cache-control', 'no-store');
    done();
  });
}
