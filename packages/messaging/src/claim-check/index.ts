export * from './blob-store.js';
export * from './claim-check.js';
export * from './errors.js';
export * from './filesystem-blob-store.js';
export * from './memory-blob-store.js';
export * from './s3-blob-store.js';
export type { AwsCredentials } from './sigv4.js';
