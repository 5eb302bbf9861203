/**
 * What the logs must not hold: the owner's access code (a path segment of the old owner links, /manage/{slug}/
 * {accessCode}, whose requests are not logged either), e-mail addresses and access codes in query strings
 * (GET /api/orders/find?email=&accessCode=), tokens, secrets, and the Authorization and Cookie headers. pino's redaction censors such fields wherever they are logged; the request
 * serializer masks them inside each request's URL, and a message hook inside text (Fastify names an unknown route's
 * URL in its message). Masked values read `[redacted]`.
 */
import { type LoggerOptions, stdSerializers } from 'pino';

const MASK = '[redacted]';
/** Query parameters whose values are secret or personal, by name. */
const SECRET_PARAMETER = /e-?mail|code|token|secret|password|key|auth/i;
const EMAIL = /[^\s/?&=:;,'"<>@]+@[^\s/?&=:;,'"<>@]+/g;
/**
 * The second segment of /manage/{slug}/... when it is none of the owner's pages (pages/routes/owner-*.ts): an old
 * link's access code, masked (those requests are not logged, but a message may name the URL).
 */
const OLD_OWNER_LINK =
  /^(\/manage\/[^/]+\/)(?!(?:edit|publish|unpublish|access-code|seats|orders|sign-out)(?:\/|$))[^/]+/;
/** Fields censored wherever they appear in a logged object (at the top or one level down). */
const SECRET_FIELDS = [
  'email',
  'ownerEmail',
  'accessCode',
  'token',
  'password',
  'secret',
  'authorization',
  'cookie',
];

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** A path segment or query value holding an e-mail address, written plainly or percent-encoded. */
function hasEmail(text: string): boolean {
  return new RegExp(EMAIL.source).test(decoded(text));
}

/** `url` with the owner's access code, e-mail addresses and secret query values masked. */
export function redactUrl(url: string): string {
  const queryAt = url.indexOf('?');
  const path = (queryAt === -1 ? url : url.slice(0, queryAt))
    // The access code is the owner's password: the old links /manage/{slug}/{accessCode}/... carried it.
    .replace(OLD_OWNER_LINK, `$1${MASK}`)
    .split('/')
    .map((segment) => (hasEmail(segment) ? MASK : segment))
    .join('/');
  if (queryAt === -1) return path;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return hasEmail(pair) ? MASK : pair;
      const name = pair.slice(0, equals);
      return SECRET_PARAMETER.test(decoded(name)) || hasEmail(pair.slice(equals + 1))
        ? `${name}=${MASK}`
        : pair;
    });
  return `${path}?${query.join('&')}`;
}

/** Free text with every URL path in it redacted (redactUrl) and e-mail addresses masked. */
export function redactText(text: string): string {
  return text.replace(/\/\S*/g, (url) => redactUrl(url)).replace(EMAIL, MASK);
}

interface LoggedRequest {
  readonly method?: string;
  readonly url?: string;
  readonly host?: string;
  readonly ip?: string;
  readonly socket?: { readonly remotePort?: number };
}

/** pino options for the server's log at `level`: Fastify's request fields, with the URL redacted, and redaction. */
export function logOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]).concat(
        'req.headers.authorization',
        'req.headers.cookie',
        'res.headers["set-cookie"]',
      ),
      censor: MASK,
    },
    serializers: {
      req: (request: LoggedRequest) => ({
        method: request.method,
        url: redactUrl(request.url ?? ''),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
      err: (error: Error) => {
        const serialized = stdSerializers.err(error);
        return {
          ...serialized,
          message: redactText(serialized.message),
          stack: redactText(serialized.stack),
        };
      },
    },
    hooks: {
      logMethod(args, method) {
        const redacted = args.map((arg) => (typeof arg === 'string' ? redactText(arg) : arg));
        return method.apply(this, redacted as Parameters<typeof method>);
      },
    },
  };
}
