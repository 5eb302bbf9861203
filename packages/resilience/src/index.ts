export * from './errors.js';
export * from './policy.js';
export * from './transient.js';
export * from './bulkhead.js';
