/**
 * Suite "gateway": plain reverse proxying of GET requests with 1 KiB JSON answers, keep-alive, 50 and 100
 * connections from wrk (one thread), through the Stratus gateway, @fastify/http-proxy and nginx, in front of the same
 * upstream (nginx answering from memory, else a node:http server), plus the upstream called directly: the ceiling no
 * proxy can pass on this box. Each proxy and the upstream are processes of their own; the implementations take turns
 * in a rotated order each round, and the median round is reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CaseResult, PreparedSelfTimedSuite, SelfTimedOptions, SelfTimedSuite } from '../harness.js';
import { acquireRedis } from '../redis.js';
import { median } from '../stats.js';
import { UPSTREAM_BODY } from './gateway/body.js';
import {
  hasCommand,
  type LoadOutcome,
  type Running,
  startNginxProxy,
  startNginxUpstream,
  startNodeServer,
  wrk,
} from './gateway/processes.js';
import { describeError, sourceVersion } from './self-timed.js';

const here = join(import.meta.dirname, 'gateway');
const OFFLOAD =
  'the stratus row plus an RS256 JWT on every request (checked against a JWKS on loopback, verified tokens kept), ' +
  'a GCRA rate limit shared through Redis (one script call per request; high enough never to refuse), and a pino ' +
  'access-log line per request to a file';
const CONNECTIONS = [50, 100] as const;

interface Scale {
  readonly rounds: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
}
const fullScale: Scale = { rounds: 3, seconds: 5, warmupSeconds: 2 };
const quickScale: Scale = { rounds: 1, seconds: 1, warmupSeconds: 1 };

interface Impl {
  readonly impl: string;
  readonly description: string;
  start(upstream: string): Promise<Running>;
}

const IMPLS: readonly Impl[] = [
  {
    impl: 'stratus',
    description:
      '@stratus/edge startGateway, one route, defaults (128 connections per target), no access log',
    start: (upstream) => startNodeServer(join(here, 'stratus-gateway.ts'), [upstream]),
  },
  {
    impl: 'fastify-http-proxy',
    description: '@fastify/http-proxy 11 on fastify 5, defaults (undici, 128 connections), logger off',
    start: (upstream) => startNodeServer(join(here, 'fastify-proxy.ts'), [upstream]),
  },
  {
    impl: 'nginx',
    description:
      'nginx from Debian, 1 worker, proxy_pass to an upstream block with keepalive 128, access_log off',
    start: (upstream) => startNginxProxy(upstream),
  },
];

export const gatewaySuite: SelfTimedSuite = {
  name: 'gateway',
  selfTimed: true,
  async prepare(options: SelfTimedOptions): Promise<PreparedSelfTimedSuite> {
    const scale = options.quick ? quickScale : fullScale;
    const started: Running[] = [];
    const skipped: string[] = [];
    const close = async () => {
      await Promise.all(started.splice(0).map((r) => r.stop()));
    };
    return {
      async run() {
        if (!hasCommand('wrk')) {
          skipped.push('every case: wrk is not installed (Debian: apt-get install wrk)');
          return { results: [], settings: {}, skipped };
        }
        const nginx = hasCommand('nginx');
        const upstream = nginx
          ? await startNginxUpstream()
          : await startNodeServer(join(here, 'node-upstream.ts'));
        started.push(upstream);
        if (!nginx)
          skipped.push(
            'nginx: not installed (Debian: apt-get install nginx-light); the upstream is node:http',
          );
        const rows: { impl: string; url: string; headers?: string[] }[] = [
          { impl: 'direct', url: upstream.url },
        ];
        const described: Record<string, string> = {
          direct: 'wrk straight to the upstream: the ceiling of this box',
        };
        for (const impl of IMPLS) {
          if (impl.impl === 'nginx' && !nginx) continue;
          try {
            const running = await impl.start(upstream.url);
            started.push(running);
            rows.push({ impl: impl.impl, url: running.url });
            described[impl.impl] = impl.description;
          } catch (error) {
            skipped.push(`${impl.impl}: ${describeError(error)}`);
          }
        }
        const redis = await acquireRedis();
        if (redis.skip !== false) skipped.push(`stratus-offload: ${redis.skip}`);
        else {
          started.push({ url: redis.url, stop: () => redis.close() });
          const logDir = mkdtempSync(join(tmpdir(), 'stratus-bench-gateway-'));
          started.push({ url: logDir, stop: async () => rmSync(logDir, { recursive: true, force: true }) });
          try {
            const running = await startNodeServer(join(here, 'stratus-gateway.ts'), [
              upstream.url,
              'offload',
              redis.url,
              join(logDir, 'access.log'),
            ]);
            started.push(running);
            rows.push({
              impl: 'stratus-offload',
              url: running.url,
              headers: [`Authorization: Bearer ${running.extra}`],
            });
            described['stratus-offload'] = OFFLOAD;
          } catch (error) {
            skipped.push(`stratus-offload: ${describeError(error)}`);
          }
        }
        const loadAtStart = loadavg().map((l) => Number(l.toFixed(2)));
        const results: CaseResult[] = [];
        const cases = CONNECTIONS.map((c) => `proxy-c${c}`).filter(
          (c) => !options.only || options.only.includes(c),
        );
        for (const name of cases) {
          const connections = Number(name.slice('proxy-c'.length));
          const outcomes = new Map<string, LoadOutcome[]>(rows.map((row) => [row.impl, []]));
          for (const row of rows) await wrk(row.url, connections, scale.warmupSeconds, row.headers);
          for (let round = 0; round < scale.rounds; round++) {
            for (let k = 0; k < rows.length; k++) {
              const row = rows[(k + round) % rows.length] as (typeof rows)[number];
              const outcome = await wrk(row.url, connections, scale.seconds, row.headers);
              if (outcome.errors > 0)
                throw new Error(`${name} / ${row.impl}: ${outcome.errors} errors in a round`);
              outcomes.get(row.impl)?.push(outcome);
              options.log(
                `  ${name} / ${row.impl}: ${Math.round(outcome.requestsPerSec).toLocaleString('en-US')} req/s`,
              );
            }
          }
          for (const row of rows) {
            const runs = outcomes.get(row.impl) ?? [];
            const rates = runs.map((o) => o.requestsPerSec);
            results.push({
              case: name,
              impl: row.impl,
              kind: 'burst',
              callers: connections,
              summary: {
                opsPerSec: median(rates),
                p50Ms: median(runs.map((o) => o.p50Ms)),
                p99Ms: median(runs.map((o) => o.p99Ms)),
                minOpsPerSec: Math.min(...rates),
                maxOpsPerSec: Math.max(...rates),
                rounds: runs.length,
              },
              batchOps: connections,
              samples: runs.length,
              note: undefined,
            });
          }
        }
        return {
          results,
          skipped,
          settings: {
            source: sourceVersion(),
            loadAverageAtStart: loadAtStart,
            load: `wrk -t1 -c<connections> -d${scale.seconds}s --latency, GET /, keep-alive; ${scale.rounds} round(s) after a ${scale.warmupSeconds} s warm-up per row`,
            upstream: nginx
              ? 'nginx (1 worker) answering 200 with 1,024 bytes of JSON from memory'
              : 'node:http answering 200 with 1,024 bytes of JSON',
            bodyBytes: UPSTREAM_BODY.length,
            connections: CONNECTIONS,
            implementations: described,
            reported:
              'median round: req/s and wrk p50/p99; ratio = stratus ÷ row (for stratus-offload: plain ÷ offloaded, so the offloaded share of plain proxying is its inverse)',
          },
        };
      },
      close,
    };
  },
};
