import type { HashKey } from './config.js';
import type { RequestView } from './request-view.js';

/** What a balancer needs of a pool member. */
export interface Weighted {
  readonly weight: number;
  /** Requests in flight to it now. */
  readonly inflight: number;
  /** False while it is ejected or failing its health checks. */
  available(): boolean;
}

/** Picks the member for one request; `skip` is a member already tried by this request (a retry goes elsewhere). */
export interface Balancer<T extends Weighted> {
  pick(key: string | undefined, skip?: T): T | undefined;
}

/**
 * Smooth weighted round robin (nginx's): weights 5, 1, 1 give a a b a c a a, spread out rather than in runs, and
 * exact shares over every cycle of the total weight.
 */
export class RoundRobin<T extends Weighted> implements Balancer<T> {
  readonly #current: number[];

  constructor(readonly members: readonly T[]) {
    this.#current = members.map(() => 0);
  }

  pick(_key?: string, skip?: T): T | undefined {
    let best = -1;
    let total = 0;
    for (let i = 0; i < this.members.length; i++) {
      const member = this.members[i] as T;
      if (member === skip || !member.available()) continue;
      const current = (this.#current[i] as number) + member.weight;
      this.#current[i] = current;
      total += member.weight;
      if (best === -1 || current > (this.#current[best] as number)) best = i;
    }
    if (best === -1) return skip?.available() ? skip : undefined;
    (this.#current as number[])[best] = (this.#current[best] as number) - total;
    return this.members[best];
  }
}

/**
 * Least requests by the power of two choices: two random available members, the one with fewer requests in flight
 * per unit of weight wins. Near the best of a full scan without every picker herding onto the same member.
 */
export class LeastRequests<T extends Weighted> implements Balancer<T> {
  constructor(
    readonly members: readonly T[],
    readonly random: () => number = Math.random,
  ) {}

  pick(_key?: string, skip?: T): T | undefined {
    const candidates = this.members.filter((m) => m !== skip && m.available());
    if (candidates.length === 0) return skip?.available() ? skip : undefined;
    const first = candidates[Math.floor(this.random() * candidates.length)] as T;
    if (candidates.length === 1) return first;
    let second = candidates[Math.floor(this.random() * (candidates.length - 1))] as T;
    if (second === first) second = candidates[candidates.length - 1] as T;
    return load(second) < load(first) ? second : first;
  }
}

function load(member: Weighted): number {
  return (member.inflight + 1) / member.weight;
}

/** Points per unit of weight on the ring: enough for shares within a few percent of the weights. */
const POINTS_PER_WEIGHT = 160;

/**
 * Consistent hashing on a ring (ketama-like): a key keeps going to the same member while it is available, and
 * adding or removing one member moves only about 1/n of the keys. A key whose member is unavailable goes to the
 * next member along the ring. Requests without a key are spread by round robin.
 */
export class HashRing<T extends Weighted & { readonly id: string }> implements Balancer<T> {
  readonly #points: Uint32Array;
  readonly #owners: T[];
  readonly #fallback: RoundRobin<T>;

  constructor(readonly members: readonly T[]) {
    const points: { hash: number; owner: T }[] = [];
    for (const member of members) {
      for (let i = 0; i < member.weight * POINTS_PER_WEIGHT; i++)
        points.push({ hash: hash32(`${member.id}#${i}`), owner: member });
    }
    points.sort((a, b) => a.hash - b.hash);
    this.#points = Uint32Array.from(points, (p) => p.hash);
    this.#owners = points.map((p) => p.owner);
    this.#fallback = new RoundRobin(members);
  }

  pick(key: string | undefined, skip?: T): T | undefined {
    if (key === undefined) return this.#fallback.pick(undefined, skip);
    const points = this.#points;
    const h = hash32(key);
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((points[mid] as number) < h) lo = mid + 1;
      else hi = mid;
    }
    for (let n = 0; n < points.length; n++) {
      const owner = this.#owners[(lo + n) % points.length] as T;
      if (owner !== skip && owner.available()) return owner;
    }
    return skip?.available() ? skip : undefined;
  }
}

/** FNV-1a over UTF-16 code units, then a murmur3 finaliser so that near keys land far apart. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The key a request hashes on, or undefined when it does not carry one. */
export function keyOf(key: HashKey, request: RequestView): string | undefined {
  if (key === 'ip') return request.ip;
  if (key === 'path') return request.path;
  if ('header' in key) return request.header(key.header.toLowerCase());
  if ('cookie' in key) return request.cookies().get(key.cookie);
  return request.query().get(key.query) ?? undefined;
}
