import { assertObject, type Clock, systemClock } from '@stratus/core';
import {
  assertBlobKey,
  type BlobInfo,
  type BlobListOptions,
  type BlobPage,
  type BlobStore,
  checkListOptions,
} from './blob-store.js';
import { BlobStoreClosedError } from './errors.js';

export interface MemoryBlobStoreOptions {
  /** Stamps `createdAt` (default the system clock). */
  clock?: Clock;
}

/** Blobs in this process's memory, for tests and single-process use. Lists in key order. */
export class MemoryBlobStore implements BlobStore {
  readonly kind = 'memory';
  readonly #clock: Clock;
  readonly #blobs = new Map<string, { body: Uint8Array; createdAt: number }>();
  #closed = false;

  constructor(options: MemoryBlobStoreOptions = {}) {
    assertObject('options', options as unknown);
    this.#clock = options.clock ?? systemClock;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    this.#assertOpen();
    assertBlobKey(key);
    // A copy: the caller may reuse its buffer.
    this.#blobs.set(key, { body: Uint8Array.from(body), createdAt: this.#clock.now() });
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    this.#assertOpen();
    assertBlobKey(key);
    const blob = this.#blobs.get(key);
    return blob === undefined ? undefined : Uint8Array.from(blob.body);
  }

  async delete(keys: readonly string[]): Promise<void> {
    this.#assertOpen();
    for (const key of keys) assertBlobKey(key);
    for (const key of keys) this.#blobs.delete(key);
  }

  async list(options: BlobListOptions): Promise<BlobPage> {
    this.#assertOpen();
    const { prefix, olderThan, limit, cursor } = checkListOptions(options);
    const keys = [...this.#blobs.keys()]
      .filter((key) => key.startsWith(prefix) && (cursor === undefined || key > cursor))
      .sort();
    const blobs: BlobInfo[] = [];
    for (const key of keys) {
      const blob = this.#blobs.get(key);
      if (blob === undefined || blob.createdAt >= olderThan) continue;
      blobs.push({ key, createdAt: blob.createdAt, size: blob.body.byteLength });
      if (blobs.length === limit) return { blobs, cursor: key };
    }
    return { blobs, cursor: undefined };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#blobs.clear();
  }

  #assertOpen(): void {
    if (this.#closed) throw new BlobStoreClosedError(this.kind);
  }
}
