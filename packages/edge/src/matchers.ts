import { BlockList, isIP } from 'node:net';
import type { MatchConfig, ValueConditionConfig } from './config.js';
import type { RequestView } from './request-view.js';

/** A compiled route condition: true when the request matches; a path matcher also fills `params`. */
export type Matcher = (request: RequestView, params: Record<string, string>) => boolean;

/** Compiles a route's match block into one function; no block (or an empty one) matches every request. */
export function compileMatch(match: MatchConfig = {}): Matcher {
  const checks: Matcher[] = [];
  if (match.methods) {
    const methods = new Set(match.methods.map((m) => m.toUpperCase()));
    checks.push((request) => methods.has(request.method));
  }
  if (match.host !== undefined) checks.push(hostMatcher(match.host));
  if (match.prefix !== undefined) checks.push(prefixMatcher(match.prefix));
  if (match.path !== undefined) checks.push(pathMatcher(match.path));
  for (const [name, condition] of Object.entries(match.headers ?? {})) {
    const test = valueMatcher(condition);
    const header = name.toLowerCase();
    checks.push((request) => test(request.header(header)));
  }
  for (const [name, condition] of Object.entries(match.query ?? {})) {
    const test = valueMatcher(condition);
    checks.push((request) => test(request.query().get(name) ?? undefined));
  }
  for (const [name, condition] of Object.entries(match.cookies ?? {})) {
    const test = valueMatcher(condition);
    checks.push((request) => test(request.cookies().get(name)));
  }
  if (match.sourceIps) {
    const blocks = blockListOf(match.sourceIps);
    checks.push((request) => {
      const ip = request.ip;
      const family = isIP(ip);
      return family !== 0 && blocks.check(ip, family === 4 ? 'ipv4' : 'ipv6');
    });
  }
  if (checks.length === 0) return () => true;
  if (checks.length === 1) return checks[0] as Matcher;
  return (request, params) => {
    for (const check of checks) if (!check(request, params)) return false;
    return true;
  };
}

function hostMatcher(hosts: string | string[]): Matcher {
  const exact = new Set<string>();
  const suffixes: string[] = [];
  for (const host of Array.isArray(hosts) ? hosts : [hosts]) {
    const lower = host.toLowerCase();
    if (lower.startsWith('*.')) suffixes.push(lower.slice(1));
    else exact.add(lower);
  }
  return (request) => {
    const host = request.host;
    if (exact.has(host)) return true;
    for (const suffix of suffixes) if (host.length > suffix.length && host.endsWith(suffix)) return true;
    return false;
  };
}

function prefixMatcher(prefix: string): Matcher {
  const bare = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  if (bare === '') return () => true;
  return (request) => {
    const path = request.path;
    return path.startsWith(bare) && (path.length === bare.length || path.charCodeAt(bare.length) === 47);
  };
}

type Segment = { literal: string } | { param: string } | { rest: string };

export function pathSegments(pattern: string): Segment[] {
  return pattern
    .slice(1)
    .split('/')
    .map((part, index, all) => {
      if (part.startsWith(':')) return { param: part.slice(1) };
      if (part.startsWith('*') && index === all.length - 1) return { rest: part.slice(1) || 'rest' };
      return { literal: part };
    });
}

function pathMatcher(pattern: string): Matcher {
  const segments = pathSegments(pattern);
  const last = segments.at(-1);
  const rest = last !== undefined && 'rest' in last ? last.rest : undefined;
  const fixed = rest === undefined ? segments : segments.slice(0, -1);
  return (request, params) => {
    const parts = request.path.slice(1).split('/');
    if (rest === undefined ? parts.length !== fixed.length : parts.length < fixed.length) return false;
    for (let i = 0; i < fixed.length; i++) {
      const segment = fixed[i] as Segment;
      const part = parts[i] as string;
      if ('literal' in segment) {
        if (segment.literal !== part) return false;
      } else if ('param' in segment) {
        if (part === '') return false;
        params[segment.param] = part;
      }
    }
    if (rest !== undefined) params[rest] = parts.slice(fixed.length).join('/');
    return true;
  };
}

function valueMatcher(condition: ValueConditionConfig): (value: string | undefined) => boolean {
  if (typeof condition === 'string') return (value) => value === condition;
  if (Array.isArray(condition)) {
    const values = new Set(condition);
    return (value) => value !== undefined && values.has(value);
  }
  if ('regex' in condition) {
    const regex = new RegExp(condition.regex);
    return (value) => value !== undefined && regex.test(value);
  }
  return condition.present ? (value) => value !== undefined : (value) => value === undefined;
}

/** Whether `address` is an IP address or a CIDR block (`10.0.0.0/8`, `::1/128`). */
export function isAddressBlock(address: string): boolean {
  const [ip = '', bits, extra] = address.split('/');
  const family = isIP(ip);
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  const prefix = Number(bits);
  return /^\d+$/.test(bits) && prefix <= (family === 4 ? 32 : 128);
}

function blockListOf(addresses: readonly string[]): BlockList {
  const list = new BlockList();
  for (const address of addresses) {
    const [ip = '', bits] = address.split('/');
    const type = isIP(ip) === 4 ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(ip, type);
    else list.addSubnet(ip, Number(bits), type);
  }
  return list;
}
