import { Pool } from 'undici';

export interface DispatcherSettings {
  readonly connections: number;
  readonly connectTimeoutMs: number;
  readonly bodyTimeoutMs: number;
}

interface Held {
  readonly pool: Pool;
  users: number;
}

/**
 * Keep-alive connection pools by origin and settings, shared by every pool member that names the same origin, in
 * one config and across reloads: a reload that keeps a target keeps its open connections. A pool is closed (after
 * its requests in flight finish) when its last user lets go.
 */
export class Dispatchers {
  readonly #held = new Map<string, Held>();
  readonly #keys = new Map<Pool, string>();

  acquire(origin: string, settings: DispatcherSettings): Pool {
    const key = `${origin} ${settings.connections} ${settings.connectTimeoutMs} ${settings.bodyTimeoutMs}`;
    let held = this.#held.get(key);
    if (held === undefined) {
      const pool = new Pool(origin, {
        connections: settings.connections,
        connectTimeout: settings.connectTimeoutMs,
        bodyTimeout: settings.bodyTimeoutMs,
        pipelining: 1,
      });
      held = { pool, users: 0 };
      this.#held.set(key, held);
      this.#keys.set(pool, key);
    }
    held.users += 1;
    return held.pool;
  }

  release(pool: Pool): void {
    const key = this.#keys.get(pool);
    const held = key === undefined ? undefined : this.#held.get(key);
    if (key === undefined || held === undefined) return;
    held.users -= 1;
    if (held.users > 0) return;
    this.#held.delete(key);
    this.#keys.delete(pool);
    void pool.close().catch(() => {});
  }

  /** Closes every pool: requests in flight finish first. */
  async close(): Promise<void> {
    await Promise.all(this.#take().map((pool) => pool.close().catch(() => {})));
  }

  /** Closes every pool at once, failing requests in flight. */
  async destroy(): Promise<void> {
    await Promise.all(this.#take().map((pool) => pool.destroy().catch(() => {})));
  }

  #take(): Pool[] {
    const pools = [...this.#keys.keys()];
    this.#held.clear();
    this.#keys.clear();
    return pools;
  }
}
