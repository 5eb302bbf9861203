import type { GatewayConfig } from './config.js';

export interface NamedChanges {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  readonly changed: readonly string[];
}

export interface GatewayConfigDiff {
  readonly upstreams: NamedChanges;
  readonly routes: NamedChanges;
  /** True when the routes' order changed (routes match in order, so the order is part of the config). */
  readonly reordered: boolean;
  readonly retryBudgetChanged: boolean;
}

/** What applying `next` over `current` would change, by upstream and route name. */
export function diffGatewayConfigs(current: GatewayConfig, next: GatewayConfig): GatewayConfigDiff {
  const routesOf = (config: GatewayConfig) =>
    new Map(config.routes.map((route, index) => [route.name ?? `route-${index}`, route] as const));
  const currentRoutes = routesOf(current);
  const nextRoutes = routesOf(next);
  const kept = (names: Iterable<string>, other: ReadonlyMap<string, unknown>) =>
    [...names].filter((n) => other.has(n));
  return {
    upstreams: changes(new Map(Object.entries(current.upstreams)), new Map(Object.entries(next.upstreams))),
    routes: changes(currentRoutes, nextRoutes),
    reordered:
      kept(currentRoutes.keys(), nextRoutes).join('\n') !== kept(nextRoutes.keys(), currentRoutes).join('\n'),
    retryBudgetChanged: JSON.stringify(current.retryBudget) !== JSON.stringify(next.retryBudget),
  };
}

function changes(current: ReadonlyMap<string, unknown>, next: ReadonlyMap<string, unknown>): NamedChanges {
  return {
    added: [...next.keys()].filter((name) => !current.has(name)),
    removed: [...current.keys()].filter((name) => !next.has(name)),
    changed: [...next.keys()].filter(
      (name) => current.has(name) && JSON.stringify(current.get(name)) !== JSON.stringify(next.get(name)),
    ),
  };
}

/** The diff as lines for a terminal: `+ route a`, `- upstream b`, `~ route c`; none when nothing changes. */
export function describeDiff(diff: GatewayConfigDiff): string[] {
  const lines: string[] = [];
  for (const [kind, named] of [
    ['upstream', diff.upstreams],
    ['route', diff.routes],
  ] as const) {
    for (const name of named.added) lines.push(`+ ${kind} ${name}`);
    for (const name of named.removed) lines.push(`- ${kind} ${name}`);
    for (const name of named.changed) lines.push(`~ ${kind} ${name}`);
  }
  if (diff.reordered) lines.push('~ route order');
  if (diff.retryBudgetChanged) lines.push('~ retryBudget');
  return lines;
}
