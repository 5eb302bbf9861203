// redlock 5.0.0-beta.2 ships types its package.json "exports" hides from NodeNext resolution: the little the
// benchmark uses.
declare module 'redlock' {
  import type { EventEmitter } from 'node:events';
  import type { Cluster, Redis } from 'ioredis';

  interface Settings {
    readonly driftFactor: number;
    /** Attempts after the first; -1 for no limit (default 10). */
    readonly retryCount: number;
    /** Milliseconds between attempts (default 200). */
    readonly retryDelay: number;
    /** Up to this many milliseconds added to or taken from each delay (default 100). */
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  interface Lock {
    readonly value: string;
    release(): Promise<unknown>;
  }

  class Redlock extends EventEmitter {
    constructor(clients: Iterable<Redis | Cluster>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
  }

  export default Redlock;
}
