export * from './errors.js';
export * from './fencing.js';
export * from './leader-election.js';
export * from './lease-store.js';
export * from './memory-lease-store.js';
export * from './postgres-lease-store.js';
export * from './redis-lease-store.js';
export * from './sqlite-lease-store.js';
