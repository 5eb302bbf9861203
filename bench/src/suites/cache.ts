/**
 * Suite "cache" (anchors §13 C1): cache-aside reads side by side in one process. A local-tier hit through each
 * library's get-or-load call (Stratus `getOrLoad`, cache-manager 7 `wrap`, bentocache 1.6 `getOrSet`), memory
 * only; with Redis, a read served by Redis alone and a two-tier hit (Stratus and bentocache: cache-manager
 * would need @keyv/redis, not installed); and the stampede: 1,000 concurrent misses of a fresh key, with the
 * loader calls per burst noted.
 */
import { cacheAside, RedisCacheStore } from '@stratus/data';
import { BentoCache, bentostore } from 'bentocache';
import { memoryDriver } from 'bentocache/drivers/memory';
import { createCache } from 'cache-manager';
import type { BenchCase, PreparedSuite, Suite } from '../harness.js';
import { acquireRedis, type RedisTarget } from '../redis.js';

const KEY = 'user:42';
const VALUE = { id: 42, name: 'Ada Lovelace', roles: ['admin'] };
const TTL_MS = 600_000;
const STAMPEDE_CALLERS = 1_000;
const REDIS_CALLERS = 32;
const ROTATING_KEYS = Array.from({ length: REDIS_CALLERS }, (_, i) => `user:${i}`);
const loadValue = () => VALUE;

/** A loader that counts its calls (for the stampede notes) and answers after a macrotask, as a database would. */
function countingLoader() {
  const loader = () => {
    loader.calls++;
    return new Promise<typeof VALUE>((resolve) => setImmediate(() => resolve(VALUE)));
  };
  loader.calls = 0;
  return loader;
}

/** A stampede burst: every run misses a key never seen before, with 1,000 callers at once. */
function stampede(
  impl: string,
  call: (key: string, loader: () => Promise<unknown>) => Promise<unknown>,
): BenchCase {
  const loader = countingLoader();
  let bursts = 0;
  return {
    case: 'stampede-1000',
    impl,
    kind: 'burst',
    jobs: STAMPEDE_CALLERS,
    async run() {
      const key = `stampede:${bursts++}`;
      const pending: Promise<unknown>[] = new Array(STAMPEDE_CALLERS);
      for (let i = 0; i < STAMPEDE_CALLERS; i++) pending[i] = call(key, loader);
      await Promise.all(pending);
    },
    note: () => `${(loader.calls / Math.max(1, bursts)).toFixed(2)} loader calls per burst of 1,000 misses`,
  };
}

async function memoryCases(): Promise<{ cases: BenchCase[]; close: () => Promise<void> }> {
  const stratus = cacheAside({ ttlMs: TTL_MS });
  const manager = createCache();
  const bento = new BentoCache({
    default: 'memory',
    stores: { memory: bentostore().useL1Layer(memoryDriver({ maxItems: 10_000 })) },
  });
  // Prime each once so every measured call is a hit.
  await stratus.getOrLoad(KEY, loadValue);
  await manager.wrap(KEY, loadValue, TTL_MS);
  await bento.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS });

  const cases: BenchCase[] = [
    { case: 'local-hit', impl: 'stratus', kind: 'async', op: () => stratus.getOrLoad(KEY, loadValue) },
    {
      case: 'local-hit',
      impl: 'cache-manager',
      kind: 'async',
      op: () => manager.wrap(KEY, loadValue, TTL_MS),
    },
    {
      case: 'local-hit',
      impl: 'bentocache',
      kind: 'async',
      op: () => bento.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS }),
    },
    stampede('stratus', (key, loader) => stratus.getOrLoad(key, loader)),
    stampede('cache-manager', (key, loader) => manager.wrap(key, loader, TTL_MS)),
    stampede('bentocache', (key, loader) => bento.getOrSet({ key, factory: loader, ttl: TTL_MS })),
  ];
  return {
    cases,
    async close() {
      await manager.disconnect();
      await bento.disconnectAll();
    },
  };
}

/**
 * bentocache's Redis driver imports ioredis from its own location (bench/package.json gives it the bench's ioredis 6
 * through an override of its ^5 peer range); should it not load, the Redis rows are Stratus only, saying why.
 */
async function loadBentoRedisDriver(): Promise<
  { redisDriver: typeof import('bentocache/drivers/redis').redisDriver } | { skip: string }
> {
  try {
    return { redisDriver: (await import('bentocache/drivers/redis')).redisDriver };
  } catch (error) {
    return {
      skip: `bentocache Redis driver unavailable: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    };
  }
}

async function redisCases(
  redis: Extract<RedisTarget, { skip: false }>,
  skipped: string[],
): Promise<BenchCase[]> {
  const prefix = `bench:cache:${process.pid}:`;
  const stratusStore = new RedisCacheStore({ client: await redis.connect(), keyPrefix: `${prefix}stratus:` });
  const storeOnly = cacheAside({ ttlMs: TTL_MS, local: false, store: stratusStore });
  const twoTier = cacheAside({ ttlMs: TTL_MS, store: stratusStore });
  await storeOnly.getOrLoad(KEY, loadValue);
  for (const key of ROTATING_KEYS) await storeOnly.getOrLoad(key, loadValue);
  await twoTier.getOrLoad(KEY, loadValue);
  let rotation = 0;
  let bareRotation = 0;
  // The floor: a bare GET of the same entry on a connection of its own.
  const bare = await redis.connect();
  const entryKey = `${prefix}stratus:v:${KEY}`;
  const cases: BenchCase[] = [
    { case: 'redis-hit', impl: 'ioredis GET', kind: 'async', op: () => bare.get(entryKey) },
    {
      case: 'redis-hit-32-callers',
      impl: 'ioredis GET',
      kind: 'async',
      concurrency: REDIS_CALLERS,
      op: () => bare.get(`${prefix}stratus:v:${ROTATING_KEYS[bareRotation++ % REDIS_CALLERS]!}`),
    },
    { case: 'redis-hit', impl: 'stratus', kind: 'async', op: () => storeOnly.getOrLoad(KEY, loadValue) },
    {
      case: 'redis-hit-32-callers',
      impl: 'stratus',
      kind: 'async',
      concurrency: REDIS_CALLERS,
      // A key per caller in rotation: concurrent reads of one key would share one Redis read (single flight).
      op: () => storeOnly.getOrLoad(ROTATING_KEYS[rotation++ % REDIS_CALLERS]!, loadValue),
    },
    {
      case: 'two-tier-hit',
      impl: 'stratus',
      kind: 'async',
      op: () => twoTier.getOrLoad(KEY, loadValue),
      teardown: async () => {
        twoTier.close();
        await stratusStore.close();
      },
    },
  ];

  const driver = await loadBentoRedisDriver();
  if ('skip' in driver) {
    skipped.push(`bentocache Redis rows: ${driver.skip}`);
    return cases;
  }
  // bentocache is typed against ioredis 5 (its peer range); this client is ioredis 6, the same API.
  const bentoClient = (await redis.connect()) as never;
  const bento = new BentoCache({
    default: 'redis',
    prefix: `${prefix}bento`,
    stores: {
      redis: bentostore().useL2Layer(driver.redisDriver({ connection: bentoClient })),
      tiered: bentostore()
        .useL1Layer(memoryDriver({ maxItems: 10_000 }))
        .useL2Layer(driver.redisDriver({ connection: bentoClient })),
    },
  });
  const bentoStoreOnly = bento.use('redis');
  const bentoTiered = bento.use('tiered');
  await bentoStoreOnly.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS });
  await bentoTiered.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS });
  cases.push(
    {
      case: 'redis-hit',
      impl: 'bentocache',
      kind: 'async',
      op: () => bentoStoreOnly.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS }),
    },
    {
      case: 'two-tier-hit',
      impl: 'bentocache',
      kind: 'async',
      op: () => bentoTiered.getOrSet({ key: KEY, factory: loadValue, ttl: TTL_MS }),
      teardown: () => bento.disconnectAll().catch(() => {}),
    },
  );
  return cases;
}

export const cacheSuite: Suite = {
  name: 'cache',
  async prepare(): Promise<PreparedSuite> {
    const memory = await memoryCases();
    const cases = [...memory.cases];
    const skipped: string[] = [];
    const redis = await acquireRedis();
    let redisSettings: Record<string, unknown>;
    if (redis.skip === false) {
      cases.push(...(await redisCases(redis, skipped)));
      redisSettings = {
        server: redis.source,
        version: redis.version,
        'redis-hit': 'Redis as the only tier (Stratus local: false; bentocache an L2-only store), 1 caller',
        'redis-hit-32-callers':
          'the same with 32 concurrent callers on one connection (pipelined by ioredis)',
        'two-tier-hit': 'local LRU + Redis, served by the local tier (bentocache: no bus configured)',
      };
    } else {
      skipped.push(`Redis cases skipped: ${redis.skip}`);
      redisSettings = { skipped: redis.skip };
    }
    return {
      cases,
      skipped,
      settings: {
        value: 'a small object ({ id, name, roles[1] })',
        ttl: `${TTL_MS} ms, so every measured read is a hit`,
        'local-hit':
          'one primed key read through the get-or-load call: Stratus getOrLoad (local LRU, 10,000 entries), ' +
          'cache-manager 7.2.9 wrap (default in-memory Keyv), bentocache 1.6.1 getOrSet (memory driver, ' +
          'defaults: values serialised)',
        'stampede-1000': `${STAMPEDE_CALLERS} concurrent misses of a new key per burst, memory only; the loader answers after setImmediate`,
        concurrency: 'sequential awaits (1 caller) unless stated',
        redis: redisSettings,
      },
      async close() {
        await memory.close();
        if (redis.skip === false) await redis.close();
      },
    };
  },
};
