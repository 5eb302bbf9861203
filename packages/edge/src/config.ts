import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { GatewayConfigError } from './errors.js';
import { isAddressBlock } from './matchers.js';

/**
 * The gateway's configuration, as a file holds it (JSON) or code passes it. The schema is the boundary: a config
 * that does not match it is refused whole, with every problem listed by its path, and a running gateway keeps
 * the last good one.
 */

const Duration = (description: string, minimum = 1) =>
  Type.Integer({ minimum, maximum: 2 ** 31 - 1, description: `${description} (milliseconds)` });

/** A condition on one header, query parameter or cookie. */
const ValueCondition = Type.Union([
  Type.String({ description: 'equals this value' }),
  Type.Array(Type.String(), { minItems: 1, description: 'equals one of these values' }),
  Type.Object({ regex: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  Type.Object({ present: Type.Boolean() }, { additionalProperties: false }),
]);

const Conditions = Type.Record(Type.String({ minLength: 1 }), ValueCondition);

export const MatchSchema = Type.Object(
  {
    host: Type.Optional(
      Type.Union(
        [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
        {
          description: 'exact host names, or *.example.com for any subdomain; case-insensitive, port ignored',
        },
      ),
    ),
    prefix: Type.Optional(
      Type.String({
        pattern: '^/',
        description: 'a path prefix, on segment boundaries (/api matches /api/x)',
      }),
    ),
    path: Type.Optional(
      Type.String({
        pattern: '^/',
        description:
          'a path pattern: /users/:id matches one segment per parameter, a trailing /*rest the rest',
      }),
    ),
    methods: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z]+$' }), { minItems: 1 })),
    headers: Type.Optional(Conditions),
    query: Type.Optional(Conditions),
    cookies: Type.Optional(Conditions),
    sourceIps: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        minItems: 1,
        description: 'client addresses or CIDR blocks (IPv4 and IPv6)',
      }),
    ),
  },
  { additionalProperties: false },
);

/** How a request picks its key for consistent hashing or a sticky split. */
export const HashKeySchema = Type.Union([
  Type.Object({ header: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  Type.Object({ cookie: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  Type.Object({ query: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  Type.Literal('ip'),
  Type.Literal('path'),
]);

const LIMIT_NAME = '^[A-Za-z0-9_.-]+$';

const RateLimitSchema = Type.Object(
  {
    algorithm: Type.Optional(
      Type.Union([Type.Literal('gcra'), Type.Literal('sliding-window'), Type.Literal('fixed-window')], {
        description: 'default gcra: a smooth rate with bursts up to `burst`',
      }),
    ),
    limit: Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'requests per window' }),
    windowMs: Duration('the window the limit counts over'),
    burst: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'gcra only; default limit' }),
    ),
    key: Type.Optional(HashKeySchema),
    onStoreFailure: Type.Optional(
      Type.Union([Type.Literal('allow'), Type.Literal('refuse')], {
        description: 'when the shared store cannot answer: let requests through (fail open) or answer 503',
      }),
    ),
  },
  { additionalProperties: false },
);

const HeaderName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$" });

const AuthSchema = Type.Union([
  Type.Object(
    {
      jwt: Type.Object(
        {
          jwksUrl: Type.String({
            pattern: '^https?://',
            description: 'where the signing keys are (fetched, cached, refetched for an unknown key id)',
          }),
          issuer: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })])),
          audience: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })])),
          algorithms: Type.Optional(
            Type.Array(
              Type.Union(
                [
                  'RS256',
                  'RS384',
                  'RS512',
                  'PS256',
                  'PS384',
                  'PS512',
                  'ES256',
                  'ES384',
                  'ES512',
                  'EdDSA',
                ].map((a) => Type.Literal(a)),
              ),
              { minItems: 1, description: 'asymmetric algorithms only (default RS256, PS256, ES256, EdDSA)' },
            ),
          ),
          clockToleranceSec: Type.Optional(Type.Integer({ minimum: 0, maximum: 300 })),
          jwksRefreshMinMs: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 3_600_000,
              description:
                'least time between two fetches of the key set (default 30 s): a flood of unknown key ids cannot make the gateway hammer the issuer',
            }),
          ),
          cookie: Type.Optional(
            Type.String({ minLength: 1, description: 'take the token from this cookie, not Authorization' }),
          ),
          claimsToHeaders: Type.Optional(
            Type.Record(Type.String({ minLength: 1 }), HeaderName, {
              description:
                'claims forwarded upstream as headers; the same headers sent by clients are dropped',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      apiKeys: Type.Object(
        {
          header: Type.Optional(HeaderName),
          keys: Type.Record(
            Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
            Type.String({ pattern: '^[A-Za-z0-9_.@-]{1,128}$' }),
            {
              description: 'sha256:<hex of the key> -> the consumer it names (forwarded as x-consumer)',
            },
          ),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
]);

const RouteSchema = Type.Object(
  {
    auth: Type.Optional(
      Type.String({
        pattern: LIMIT_NAME,
        description: 'the authenticator (by name) every request must pass',
      }),
    ),
    rateLimit: Type.Optional(
      Type.Union(
        [
          Type.String({ pattern: LIMIT_NAME }),
          Type.Array(Type.String({ pattern: LIMIT_NAME }), { minItems: 1 }),
        ],
        {
          description: 'the rate limits (by name) every request of the route counts against',
        },
      ),
    ),
    name: Type.Optional(Type.String({ minLength: 1, description: 'defaults to route-<index>' })),
    match: Type.Optional(MatchSchema),
    upstream: Type.Optional(
      Type.String({ minLength: 1, description: 'the pool every matching request goes to' }),
    ),
    split: Type.Optional(
      Type.Array(
        Type.Object(
          {
            upstream: Type.String({ minLength: 1 }),
            weight: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, description: 'a weighted split between pools: a canary by percentage' },
      ),
    ),
    sticky: Type.Optional(HashKeySchema),
    rewrite: Type.Optional(
      Type.Object(
        {
          prefix: Type.Optional(Type.String({ pattern: '^/', description: 'replaces the matched prefix' })),
          path: Type.Optional(
            Type.String({ pattern: '^/', description: 'a template filled from the path parameters' }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    preserveHost: Type.Optional(
      Type.Boolean({ description: 'forward the client Host header (default false)' }),
    ),
    timeoutMs: Type.Optional(Duration('time to the upstream response headers, per attempt')),
    retry: Type.Optional(
      Type.Object(
        {
          attempts: Type.Integer({
            minimum: 1,
            maximum: 10,
            description: 'attempts in all, the first included',
          }),
          on: Type.Optional(
            Type.Array(Type.Integer({ minimum: 500, maximum: 599 }), {
              description: 'upstream statuses worth another attempt (default 502, 503, 504)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

const TargetSchema = Type.Union([
  Type.String({ pattern: '^https?://', description: 'an upstream URL, weight 1' }),
  Type.Object(
    {
      url: Type.String({ pattern: '^https?://' }),
      weight: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    },
    { additionalProperties: false },
  ),
]);

const UpstreamSchema = Type.Object(
  {
    targets: Type.Array(TargetSchema, { minItems: 1 }),
    balance: Type.Optional(
      Type.Union([
        Type.Literal('round-robin'),
        Type.Literal('least-requests'),
        Type.Object({ hash: HashKeySchema }, { additionalProperties: false }),
      ]),
    ),
    connections: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100_000, description: 'keep-alive connections per target' }),
    ),
    connectTimeoutMs: Type.Optional(Duration('connection timeout')),
    bodyTimeoutMs: Type.Optional(Duration('idle time allowed between body chunks of a response')),
    healthCheck: Type.Optional(
      Type.Object(
        {
          path: Type.String({ pattern: '^/' }),
          intervalMs: Type.Optional(Duration('time between probes of a target')),
          timeoutMs: Type.Optional(Duration('a probe without an answer by then fails')),
          healthyThreshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
          unhealthyThreshold: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
        },
        { additionalProperties: false },
      ),
    ),
    ejection: Type.Optional(
      Type.Object(
        {
          consecutiveFailures: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
          baseMs: Type.Optional(Duration('first ejection; each later one lasts one base longer')),
          maxMs: Type.Optional(Duration('longest ejection')),
          maxEjectedPercent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const GatewayConfigSchema = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    upstreams: Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.:-]+$' }), UpstreamSchema),
    rateLimits: Type.Optional(Type.Record(Type.String({ pattern: LIMIT_NAME }), RateLimitSchema)),
    auth: Type.Optional(Type.Record(Type.String({ pattern: LIMIT_NAME }), AuthSchema)),
    routes: Type.Array(RouteSchema),
    retryBudget: Type.Optional(
      Type.Object(
        {
          ratio: Type.Number({ minimum: 0, maximum: 10, description: 'retries allowed per request' }),
          minPerSecond: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type GatewayConfig = Static<typeof GatewayConfigSchema>;
export type RouteConfig = GatewayConfig['routes'][number];
export type MatchConfig = Static<typeof MatchSchema>;
export type UpstreamConfig = GatewayConfig['upstreams'][string];
export type HashKey = Static<typeof HashKeySchema>;
export type RateLimitConfig = Static<typeof RateLimitSchema>;
export type AuthConfig = Static<typeof AuthSchema>;
export type ValueConditionConfig = Static<typeof ValueCondition>;

const checker = TypeCompiler.Compile(GatewayConfigSchema);

/** Checks a parsed config against the schema and what a schema cannot say (references, exclusive fields). */
export function parseGatewayConfig(value: unknown): GatewayConfig {
  const problems = [...checker.Errors(value)].map(
    (error) => `${error.path || '/'}: ${error.message}${describeSchema(error.schema)}`,
  );
  if (problems.length > 0) throw new GatewayConfigError(problems);
  const config = value as GatewayConfig;
  problems.push(...crossChecks(config));
  if (problems.length > 0) throw new GatewayConfigError(problems);
  return config;
}

function describeSchema(schema: TSchema): string {
  return typeof schema.description === 'string' ? ` (${schema.description})` : '';
}

function crossChecks(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  config.routes.forEach((route, index) => {
    const at = `/routes/${index}`;
    const name = route.name ?? `route-${index}`;
    if (names.has(name)) problems.push(`${at}/name: "${name}" names two routes`);
    names.add(name);
    const destinations = [route.upstream, route.split].filter((d) => d !== undefined).length;
    if (destinations !== 1) problems.push(`${at}: give exactly one of upstream and split`);
    for (const upstream of [route.upstream, ...(route.split ?? []).map((s) => s.upstream)]) {
      if (upstream !== undefined && !Object.hasOwn(config.upstreams, upstream))
        problems.push(`${at}: no upstream named "${upstream}"`);
    }
    if (route.split?.every((s) => s.weight === 0))
      problems.push(`${at}/split: at least one weight must be above 0`);
    if (route.sticky && !route.split) problems.push(`${at}/sticky: only a split can be sticky`);
    if (route.auth !== undefined && !Object.hasOwn(config.auth ?? {}, route.auth))
      problems.push(`${at}/auth: no authenticator named "${route.auth}"`);
    for (const limit of [route.rateLimit ?? []].flat()) {
      if (!Object.hasOwn(config.rateLimits ?? {}, limit))
        problems.push(`${at}/rateLimit: no rate limit named "${limit}"`);
    }
    const match = route.match ?? {};
    if (match.prefix !== undefined && match.path !== undefined)
      problems.push(`${at}/match: give prefix or path, not both`);
    if (route.rewrite?.prefix !== undefined && match.prefix === undefined)
      problems.push(`${at}/rewrite/prefix: needs match.prefix`);
    if (route.rewrite?.path !== undefined) {
      if (match.path === undefined) problems.push(`${at}/rewrite/path: needs match.path`);
      else {
        const params = new Set([...match.path.matchAll(/[:*]([A-Za-z0-9_]+)/g)].map((m) => m[1]));
        for (const [, param] of route.rewrite.path.matchAll(/[:*]([A-Za-z0-9_]+)/g)) {
          if (!params.has(param))
            problems.push(`${at}/rewrite/path: ":${param}" is not a parameter of match.path`);
        }
      }
    }
    for (const [field, conditions] of [
      ['headers', match.headers],
      ['query', match.query],
      ['cookies', match.cookies],
    ] as const) {
      for (const [key, condition] of Object.entries(conditions ?? {})) {
        if (typeof condition === 'object' && 'regex' in condition) {
          try {
            new RegExp(condition.regex);
          } catch (error) {
            problems.push(`${at}/match/${field}/${key}/regex: ${(error as Error).message}`);
          }
        }
      }
    }
  });
  for (const [name, limit] of Object.entries(config.rateLimits ?? {})) {
    if (limit.burst !== undefined && (limit.algorithm ?? 'gcra') !== 'gcra')
      problems.push(`/rateLimits/${name}/burst: only the gcra algorithm takes a burst`);
  }
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    upstream.targets.forEach((target, index) => {
      const url = typeof target === 'string' ? target : target.url;
      if (!URL.canParse(url)) problems.push(`/upstreams/${name}/targets/${index}: "${url}" is not a URL`);
      else if (new URL(url).search !== '' || new URL(url).hash !== '')
        problems.push(`/upstreams/${name}/targets/${index}: a target URL takes no query or fragment`);
    });
  }
  config.routes.forEach((route, index) => {
    for (const address of route.match?.sourceIps ?? []) {
      if (!isAddressBlock(address))
        problems.push(`/routes/${index}/match/sourceIps: "${address}" is not an IP address or CIDR block`);
    }
  });
  return problems;
}
