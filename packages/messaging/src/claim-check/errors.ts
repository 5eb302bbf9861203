import { StratusError } from '@stratus/core';

/** A blob key or key prefix a blob store cannot hold safely (path traversal, empty, odd characters, too long). */
export class InvalidBlobKeyError extends StratusError {
  readonly key: unknown;
  constructor(key: unknown, reason: string) {
    super(
      'ERR_STRATUS_INVALID_BLOB_KEY',
      `Invalid blob key ${JSON.stringify(key) ?? String(key)}: ${reason}`,
    );
    this.key = key;
  }
}

/** The blob store was closed; in-flight requests of a store that owns connections are aborted with it. */
export class BlobStoreClosedError extends StratusError {
  readonly store: string;
  constructor(store: string) {
    super('ERR_STRATUS_BLOB_STORE_CLOSED', `The ${store} blob store is closed`);
    this.store = store;
  }
}

/** The payload a claim check refers to is gone (released, swept, or never stored). Retrying will not help. */
export class ClaimCheckMissingError extends StratusError {
  readonly key: string;
  constructor(key: string) {
    super('ERR_STRATUS_CLAIM_CHECK_MISSING', `The claim-checked payload "${key}" is not in the blob store`);
    this.key = key;
  }
}

/**
 * A claim-check reference is unsigned, or its signature does not match any of the configured signing keys:
 * it was forged or altered, or signed with a key this consumer does not trust.
 */
export class ClaimCheckSignatureError extends StratusError {
  constructor(reason: string) {
    super('ERR_STRATUS_CLAIM_CHECK_SIGNATURE', `Claim-check reference rejected: ${reason}`);
  }
}

/** A claim-check reference is malformed, or the stored payload does not match the size and digest it names. */
export class ClaimCheckCorruptError extends StratusError {
  constructor(reason: string) {
    super('ERR_STRATUS_CLAIM_CHECK_CORRUPT', `Corrupt claim check: ${reason}`);
  }
}
