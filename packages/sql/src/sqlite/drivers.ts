import { createRequire } from 'node:module';
import { StratusError } from '@stratus/core';
import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDriverName } from './database.js';
import type { NodeSqliteModule } from './node-sqlite.js';

/** The driver asked for cannot be loaded here, or the handle given is not one this module knows. */
export class SqliteDriverError extends StratusError {
  readonly driver: string;
  constructor(driver: string, message: string, options?: { cause?: unknown }) {
    super('ERR_STRATUS_SQLITE_DRIVER', message, options);
    this.driver = driver;
  }
}

const require = createRequire(import.meta.url);

function loadNodeSqlite(): NodeSqliteModule | string {
  try {
    return require('node:sqlite') as NodeSqliteModule;
  } catch (error) {
    return `node:sqlite is not available on Node ${process.versions.node} (${(error as Error).message})`;
  }
}

function loadBetterSqlite3(): typeof BetterSqlite3 | string {
  try {
    const Database = require('better-sqlite3') as typeof BetterSqlite3;
    // The JS module loads even when its native addon was built for another Node; opening a database proves it.
    new Database(':memory:').close();
    return Database;
  } catch (error) {
    return `better-sqlite3 cannot be loaded on Node ${process.versions.node} (${(error as Error).message.split('\n')[0]})`;
  }
}

const loaded = new Map<SqliteDriverName, unknown>();
export function load(driver: 'node:sqlite'): NodeSqliteModule | string;
export function load(driver: 'better-sqlite3'): typeof BetterSqlite3 | string;
export function load(driver: SqliteDriverName): unknown {
  if (!loaded.has(driver))
    loaded.set(driver, driver === 'node:sqlite' ? loadNodeSqlite() : loadBetterSqlite3());
  return loaded.get(driver);
}

/** True when `driver` can be used in this process, else the reason it cannot (for test skips and errors). */
export function sqliteDriverAvailable(driver: SqliteDriverName): true | string {
  const module = driver === 'node:sqlite' ? load('node:sqlite') : load('better-sqlite3');
  return typeof module === 'string' ? module : true;
}

export function chooseDriver(requested: 'auto' | SqliteDriverName): SqliteDriverName {
  if (requested !== 'auto') {
    const available = sqliteDriverAvailable(requested);
    if (available !== true) throw new SqliteDriverError(requested, available);
    return requested;
  }
  if (sqliteDriverAvailable('node:sqlite') === true) return 'node:sqlite';
  const better = sqliteDriverAvailable('better-sqlite3');
  if (better !== true) {
    throw new SqliteDriverError(
      'auto',
      `No SQLite driver: node:sqlite needs Node 22.5+, and ${better}. Install better-sqlite3 or use Node 22.13+`,
    );
  }
  return 'better-sqlite3';
}
