import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { assertObject, type Clock, InvalidOptionsError, randomId, systemClock } from '@stratus/core';
import {
  assertBlobKey,
  type BlobInfo,
  type BlobListOptions,
  type BlobPage,
  type BlobStore,
  checkListOptions,
  isBlobKey,
} from './blob-store.js';
import { BlobStoreClosedError } from './errors.js';

export interface FilesystemBlobStoreOptions {
  /** The directory holding the blobs; created when the first blob is written. */
  directory: string;
  /** Stamps `createdAt`, kept as the file's modification time (default the system clock). */
  clock?: Clock;
  /**
   * Flush each blob and its directory entry to disk before `put` resolves (default true), so a message sent
   * after the put never outlives its payload in a power cut. Off trades that for speed (tests, scratch data).
   */
  fsync?: boolean;
}

/** Files and directories touched at once by a delete or a listing's stat calls. */
const PARALLEL_FILE_OPS = 32;

/**
 * Blobs as files in a directory: the embedded default. Each key lives in one of 256 subdirectories picked by
 * a hash of the key (`<directory>/<2 hex digits>/<key with '/' as '~'>`), so no directory grows huge. A put
 * writes a temporary file (`~<random>`, a name no key maps to) in the same subdirectory and renames it over the
 * target: readers in any process see the old blob or the new one, never part of one. Several processes can
 * share the directory. A crash mid-put can leave a `~` file behind; listings skip such files.
 */
export class FilesystemBlobStore implements BlobStore {
  readonly kind = 'filesystem';
  readonly directory: string;
  readonly #clock: Clock;
  readonly #fsync: boolean;
  #closed = false;

  constructor(options: FilesystemBlobStoreOptions) {
    assertObject('options', options as unknown);
    const { directory, clock = systemClock, fsync = true } = options;
    if (typeof directory !== 'string' || directory.length === 0) {
      throw new InvalidOptionsError('directory', 'expected a directory path');
    }
    if (typeof fsync !== 'boolean') throw new InvalidOptionsError('fsync', 'expected a boolean');
    this.directory = resolve(directory);
    this.#clock = clock;
    this.#fsync = fsync;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    this.#assertOpen();
    assertBlobKey(key);
    const dir = join(this.directory, fanOut(key));
    await mkdir(dir, { recursive: true });
    const temporary = join(dir, `~${randomId()}`);
    try {
      const file = await open(temporary, 'wx');
      try {
        await file.writeFile(body);
        const seconds = this.#clock.now() / 1000;
        await file.utimes(seconds, seconds);
        if (this.#fsync) await file.sync();
      } finally {
        await file.close();
      }
      await rename(temporary, join(dir, fileName(key)));
    } catch (error) {
      await unlink(temporary).catch(() => {});
      throw error;
    }
    if (this.#fsync) await syncDirectory(dir);
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.#assertOpen();
    assertBlobKey(key);
    try {
      const bytes = await readFile(this.#path(key));
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    this.#assertOpen();
    for (const key of keys) assertBlobKey(key);
    for (let i = 0; i < keys.length; i += PARALLEL_FILE_OPS) {
      await Promise.all(
        keys.slice(i, i + PARALLEL_FILE_OPS).map((key) =>
          unlink(this.#path(key)).catch((error: unknown) => {
            if (!isMissing(error)) throw error;
          }),
        ),
      );
    }
  }

  /** Pages run through the subdirectories in order, each one's files by name; the cursor is `<dir>/<file>`. */
  async list(options: BlobListOptions): Promise<BlobPage> {
    this.#assertOpen();
    const { prefix, olderThan, limit, cursor } = checkListOptions(options);
    const [afterDir, afterFile] = cursor === undefined ? ['', ''] : parseCursor(cursor);
    const blobs: BlobInfo[] = [];
    const dirs = (await readNames(this.directory)).filter((d) => FAN_OUT_DIR.test(d) && d >= afterDir).sort();
    for (const dir of dirs) {
      const names = (await readNames(join(this.directory, dir)))
        .filter((name) => {
          if (dir === afterDir && name <= afterFile) return false;
          const key = keyOf(name);
          return isBlobKey(key) && key.startsWith(prefix);
        })
        .sort();
      for (let i = 0; i < names.length; i += PARALLEL_FILE_OPS) {
        const chunk = names.slice(i, i + PARALLEL_FILE_OPS);
        const infos = await Promise.all(chunk.map((name) => this.#info(dir, name)));
        for (const [j, info] of infos.entries()) {
          if (info === undefined || info.createdAt >= olderThan) continue;
          blobs.push(info);
          if (blobs.length === limit) return { blobs, cursor: `${dir}/${chunk[j]}` };
        }
      }
    }
    return { blobs, cursor: undefined };
  }

  async close(): Promise<void> {
    this.#closed = true;
  }

  async #info(dir: string, name: string): Promise<BlobInfo | undefined> {
    try {
      const stats = await stat(join(this.directory, dir, name));
      return { key: keyOf(name), createdAt: Math.round(stats.mtimeMs), size: stats.size };
    } catch (error) {
      // Deleted since the directory was read.
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  #path(key: string): string {
    return join(this.directory, fanOut(key), fileName(key));
  }

  #assertOpen(): void {
    if (this.#closed) throw new BlobStoreClosedError(this.kind);
  }
}

const FAN_OUT_DIR = /^[0-9a-f]{2}$/;

function fanOut(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 2);
}

/** Keys never contain '~', so '/' maps to it one-to-one and no key maps to a temporary `~...` file. */
function fileName(key: string): string {
  return key.replaceAll('/', '~');
}

function keyOf(name: string): string {
  return name.replaceAll('~', '/');
}

function parseCursor(cursor: string): [string, string] {
  const match = /^([0-9a-f]{2})\/([^/]+)$/.exec(cursor);
  if (match === null) throw new InvalidOptionsError('cursor', 'not a cursor of this filesystem blob store');
  return [match[1] as string, match[2] as string];
}

async function readNames(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/** Makes a rename durable. Windows cannot open directories for syncing; its renames are journaled anyway. */
async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ENOENT';
}
