import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import pg from 'pg';
import { findPostgresBinaries, startPostgres } from './postgres-server.js';
import { findRedisServer, startRedis } from './redis-server.js';
import { freePort } from './server-processes.js';
import {
  POSTGRES_UNAVAILABLE_ENV,
  postgresForSuite,
  REDIS_UNAVAILABLE_ENV,
  redisForSuite,
  skipUnlessCi,
  startSharedTestServers,
} from './servers.js';
import { waitUntil } from './virtual-clock.js';

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  // A server shutting down may cut the connection between queries: that must reach the caller as a rejection,
  // not as an unhandled 'error' event.
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end().catch(() => {});
  }
}

function adminUrlOf(url: string): string {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  return admin.toString();
}

/** Runs `fn` with some environment variables replaced (undefined deletes), restoring them afterwards. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((key) => [key, process.env[key]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

describe('freePort', () => {
  it('gives a loopback port that can be bound', async () => {
    const port = await freePort();
    assert.ok(Number.isInteger(port) && port > 0 && port < 65_536);
  });
});

const pgBinaries = findPostgresBinaries();
const noPgBinaries = 'reason' in pgBinaries ? skipUnlessCi(pgBinaries.reason) : false;

describe('startPostgres', { skip: noPgBinaries }, () => {
  it('starts a throwaway cluster on loopback and removes it on stop', async () => {
    const server = await startPostgres();
    try {
      assert.match(server.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
      const { rows } = await query(server.url, 'SHOW fsync');
      assert.equal(rows[0].fsync, 'off');
      assert.ok(existsSync(server.dataDir));
    } finally {
      await server.stop();
    }
    assert.equal(existsSync(server.dataDir), false);
    await assert.rejects(query(server.url, 'SELECT 1'));
    await server.stop(); // idempotent
  });

  it('restarts on the same port and data directory, cutting connections and keeping committed data', async () => {
    const server = await startPostgres();
    const client = new pg.Client({ connectionString: server.url });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('CREATE TABLE kept (n int)');
      await client.query('INSERT INTO kept VALUES (1)');
      const downtimeMs = 300;
      const restarted = server.restart({ downtimeMs });
      // Down for a while: connecting fails until it is back.
      await waitUntil(
        () =>
          query(server.url, 'SELECT 1').then(
            () => false,
            () => true,
          ),
        'the server is down',
      );
      await restarted;
      await assert.rejects(client.query('SELECT 1'), 'the old connection was cut');
      const { rows } = await query(server.url, 'SELECT n FROM kept');
      assert.deepEqual(rows, [{ n: 1 }]);
    } finally {
      await client.end().catch(() => {});
      await server.stop();
    }
  });
});

const redisServer = findRedisServer();
const noRedisServer = typeof redisServer === 'string' ? false : skipUnlessCi(redisServer.reason);

describe('startRedis', { skip: noRedisServer }, () => {
  it('starts a throwaway redis-server and stops it', async () => {
    const server = await startRedis();
    const client = new Redis(server.url, { lazyConnect: true, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      assert.equal(await client.ping(), 'PONG');
      assert.deepEqual(await client.config('GET', 'save'), ['save', '']);
    } finally {
      client.disconnect();
      await server.stop();
    }
    const probe = new Redis(server.url, { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    await assert.rejects(probe.connect());
    probe.disconnect();
  });

  for (const persistent of [true, false]) {
    it(`restarts on the same port after a SIGKILL, ${persistent ? 'keeping' : 'losing'} its data when ${persistent ? '' : 'not '}persistent`, async () => {
      const server = await startRedis({ persistent });
      const client = new Redis(server.url, { retryStrategy: () => 50, maxRetriesPerRequest: null });
      client.on('error', () => {});
      try {
        await client.set('kept', 'yes');
        await server.restart({ downtimeMs: 100 });
        assert.equal(await client.get('kept'), persistent ? 'yes' : null);
        assert.deepEqual(await client.config('GET', 'appendonly'), ['appendonly', persistent ? 'yes' : 'no']);
      } finally {
        client.disconnect();
        await server.stop();
      }
    });
  }
});

const pgA = await postgresForSuite('testkit servers: A');
const pgB = await postgresForSuite('testkit servers: A');

describe('postgresForSuite', { skip: pgA.skip || pgB.skip }, () => {
  it('gives each suite a fresh database of its own', async () => {
    assert.ok(pgA.skip === false && pgB.skip === false);
    assert.match(pgA.database, /^stratus_testkit_servers_a_[a-z0-9]+$/);
    assert.notEqual(pgA.database, pgB.database);
    await query(pgA.url, 'CREATE TABLE only_in_a (id int)');
    await query(pgA.url, 'INSERT INTO only_in_a VALUES (1)');
    const inB = await query(pgB.url, "SELECT to_regclass('only_in_a') AS t");
    assert.equal(inB.rows[0].t, null);
    const { rows } = await query(
      pgA.url,
      'SELECT current_database() AS db, count(*)::int AS n FROM only_in_a',
    );
    assert.deepEqual(rows[0], { db: pgA.database, n: 1 });
  });

  it('release drops the database even with a session still on it, and is idempotent', async () => {
    assert.ok(pgA.skip === false && pgB.skip === false);
    const lingering = new pg.Client({ connectionString: pgB.url });
    lingering.on('error', () => {});
    await lingering.connect();
    await pgA.release();
    await pgB.release();
    await pgB.release();
    const { rows } = await query(
      adminUrlOf(pgA.url),
      'SELECT datname FROM pg_database WHERE datname = ANY($1)',
      [[pgA.database, pgB.database]],
    );
    assert.deepEqual(rows, []);
    await lingering.end().catch(() => {});
  });
});

const redisA = await redisForSuite('testkit servers');
const redisB = await redisForSuite('testkit servers');

describe('redisForSuite', { skip: redisA.skip || redisB.skip }, () => {
  it('gives unique key prefixes and release deletes only its own keys', async () => {
    assert.ok(redisA.skip === false && redisB.skip === false);
    assert.notEqual(redisA.keyPrefix, redisB.keyPrefix);
    assert.ok(redisA.keyPrefix.startsWith('stratus-test:testkit_servers:'));
    const client = new Redis(redisA.url);
    try {
      const many = Array.from({ length: 2_500 }, (_, i) => [`${redisA.keyPrefix}k${i}`, 'x']).flat();
      await client.mset(...many);
      await client.set(`${redisB.keyPrefix}kept`, 'y');
      await redisA.release();
      await redisA.release();
      assert.equal(await client.exists(`${redisA.keyPrefix}k0`, `${redisA.keyPrefix}k2499`), 0);
      assert.equal(await client.get(`${redisB.keyPrefix}kept`), 'y');
      await redisB.release();
      assert.equal(await client.exists(`${redisB.keyPrefix}kept`), 0);
    } finally {
      client.disconnect();
    }
  });
});

describe('unavailable servers', () => {
  it('suites skip at once with the reason the runner exported', async () => {
    await withEnv(
      {
        CI: undefined,
        DATABASE_URL: undefined,
        REDIS_URL: undefined,
        [POSTGRES_UNAVAILABLE_ENV]: 'no postgres here',
        [REDIS_UNAVAILABLE_ENV]: 'no redis here',
      },
      async () => {
        const p = await postgresForSuite('x');
        const r = await redisForSuite('x');
        assert.equal(p.skip, 'PostgreSQL unavailable: no postgres here');
        assert.equal(p.url, undefined);
        assert.equal(r.skip, 'Redis unavailable: no redis here');
        await p.release();
        await r.release();
      },
    );
  });

  it('under CI an unavailable server is an error, not a skip', async () => {
    await withEnv(
      { CI: 'true', DATABASE_URL: undefined, [POSTGRES_UNAVAILABLE_ENV]: 'no postgres here' },
      async () => {
        await assert.rejects(postgresForSuite('x'), /PostgreSQL unavailable: no postgres here/);
      },
    );
  });

  it('skipUnlessCi gives the reason to skip, and under CI throws it', async () => {
    await withEnv({ CI: undefined }, async () => assert.equal(skipUnlessCi('no server'), 'no server'));
    await withEnv({ CI: 'true' }, async () =>
      assert.throws(() => skipUnlessCi('no server'), /no server \(CI=true/),
    );
  });
});

describe('startSharedTestServers', () => {
  const base = { PATH: process.env.PATH, STRATUS_TEST_REDIS_SERVER: '/nonexistent/redis-server' };

  it('uses the given URLs without starting anything', { skip: pgA.skip || redisA.skip }, async () => {
    assert.ok(pgA.skip === false && redisA.skip === false);
    const lines: string[] = [];
    const env = { ...base, DATABASE_URL: adminUrlOf(pgA.url), REDIS_URL: redisA.url };
    const servers = await startSharedTestServers({ env, log: (l) => lines.push(l) });
    assert.deepEqual(servers.env, { DATABASE_URL: env.DATABASE_URL, REDIS_URL: env.REDIS_URL });
    assert.ok(lines.some((l) => l.startsWith('PostgreSQL: using ')));
    await servers.stop();
  });

  it('exports and prints the reason a server cannot be had', { skip: pgA.skip }, async () => {
    assert.ok(pgA.skip === false);
    const lines: string[] = [];
    const env = { ...base, DATABASE_URL: adminUrlOf(pgA.url) };
    const servers = await startSharedTestServers({ env, log: (l) => lines.push(l) });
    assert.match(
      servers.env[REDIS_UNAVAILABLE_ENV] ?? '',
      /STRATUS_TEST_REDIS_SERVER=.* is not an executable/,
    );
    assert.equal(servers.env.REDIS_URL, undefined);
    assert.ok(lines.some((l) => l.startsWith('Redis unavailable: ')));
    await servers.stop();
  });

  it('fails loudly under CI when a server cannot be had', { skip: pgA.skip }, async () => {
    assert.ok(pgA.skip === false);
    const env = { ...base, CI: 'true', DATABASE_URL: adminUrlOf(pgA.url) };
    await assert.rejects(startSharedTestServers({ env, log: () => {} }), /CI needs every test server/);
  });

  it('reports a given URL that is unreachable', async () => {
    const port = await freePort();
    const env = { ...base, DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/postgres` };
    const servers = await startSharedTestServers({ env, log: () => {} });
    assert.match(servers.env[POSTGRES_UNAVAILABLE_ENV] ?? '', /^DATABASE_URL is set but unreachable: /);
    await servers.stop();
  });
});
