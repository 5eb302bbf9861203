/**
 * The port behind the Claim-Check pattern: a flat namespace of immutable byte blobs (memory, a directory, an
 * S3-compatible bucket). Deliberately small: what the claim check needs to store a payload, fetch it, delete it
 * after the message completed, and find orphans by age.
 */
import { assertInteger, assertObject, InvalidOptionsError } from '@stratus/core';
import { InvalidBlobKeyError } from './errors.js';

export interface BlobInfo {
  readonly key: string;
  /** When the blob was written (epoch ms): the store's clock, or for S3 the server's Last-Modified. */
  readonly createdAt: number;
  /** Size in bytes. */
  readonly size: number;
}

export interface BlobListOptions {
  /** Only keys starting with this string. */
  readonly prefix?: string | undefined;
  /** Only blobs created strictly before this time (epoch ms). */
  readonly olderThan?: number | undefined;
  /** At most this many blobs per page, 1..1000. */
  readonly limit: number;
  /** Where the previous page stopped (its `cursor`); omit for the first page. */
  readonly cursor?: string | undefined;
}

export interface BlobPage {
  readonly blobs: BlobInfo[];
  /**
   * Set while the listing may go on: pass it back to get the next page. A page may hold fewer than `limit`
   * blobs, even none, while the cursor is set (a store may bound the work of one call). Deleting listed blobs
   * between pages is safe.
   */
  readonly cursor: string | undefined;
}

export interface BlobStore {
  /** 'memory', 'filesystem', 's3'. */
  readonly kind: string;
  /** Stores `body` under `key`, replacing any blob of that key; readers see the old or the new blob, never part. */
  put(key: string, body: Uint8Array): Promise<void>;
  /** The bytes stored under `key`, or undefined when there are none. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Deletes the blobs of these keys; missing keys are ignored, so deleting twice is harmless. */
  delete(keys: readonly string[]): Promise<void>;
  /** One page of blobs, in an order of the store's choosing that stays stable across pages. */
  list(options: BlobListOptions): Promise<BlobPage>;
  /** Later calls reject with BlobStoreClosedError. Closes only what the store owns. */
  close(): Promise<void>;
}

/** The longest key a store accepts: room for a filename (255 bytes) and an S3 key prefix (keys go to 1024). */
export const MAX_BLOB_KEY_LENGTH = 200;

/**
 * Path segments of ASCII letters, digits, '.', '_' and '-' joined by '/'. No segment is empty or starts with
 * '.', which rules out '.', '..' (path traversal) and hidden files; keys are the same string on every store,
 * need no escaping in a URL or a file name, and sort the same in JavaScript and in S3 (UTF-8 byte order).
 */
const KEY_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;
const PREFIX_PATTERN = /^[A-Za-z0-9._/-]*$/;

export function isBlobKey(key: unknown): key is string {
  return typeof key === 'string' && key.length <= MAX_BLOB_KEY_LENGTH && KEY_PATTERN.test(key);
}

export function assertBlobKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new InvalidBlobKeyError(key, 'expected a string');
  if (key.length === 0) throw new InvalidBlobKeyError(key, 'empty');
  if (key.length > MAX_BLOB_KEY_LENGTH) {
    throw new InvalidBlobKeyError(key, `longer than ${MAX_BLOB_KEY_LENGTH} characters`);
  }
  if (!KEY_PATTERN.test(key)) {
    throw new InvalidBlobKeyError(
      key,
      "expected '/'-separated segments of letters, digits, '.', '_' and '-', none empty or starting with '.'",
    );
  }
}

/** A key prefix (for listing, or prepended by a store or a claim check): the key characters, possibly partial. */
export function assertBlobKeyPrefix(
  prefix: unknown,
  maxLength = MAX_BLOB_KEY_LENGTH,
): asserts prefix is string {
  if (typeof prefix !== 'string') throw new InvalidBlobKeyError(prefix, 'expected a string prefix');
  if (prefix.length > maxLength) throw new InvalidBlobKeyError(prefix, `prefix longer than ${maxLength}`);
  if (!PREFIX_PATTERN.test(prefix) || prefix.startsWith('/') || /(?:^|\/)\.|\/\//.test(prefix)) {
    throw new InvalidBlobKeyError(prefix, 'a prefix must be the start of a valid key');
  }
}

/** Checks list options once for every store; returns them with the defaults filled in. */
export function checkListOptions(options: BlobListOptions): {
  prefix: string;
  olderThan: number;
  limit: number;
  cursor: string | undefined;
} {
  assertObject('options', options as unknown);
  const { prefix = '', olderThan = Number.POSITIVE_INFINITY, limit, cursor } = options;
  assertBlobKeyPrefix(prefix);
  if (typeof olderThan !== 'number' || Number.isNaN(olderThan)) {
    throw new InvalidOptionsError('olderThan', 'expected a time in epoch milliseconds');
  }
  assertInteger('limit', limit, 1, 1000);
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length === 0)) {
    throw new InvalidOptionsError('cursor', "expected the previous page's cursor");
  }
  return { prefix, olderThan, limit, cursor };
}
