export * from './append-rules.js';
export * from './backend.js';
export * from './errors.js';
export * from './event-store.js';
export * from './event-types.js';
export * from './memory/memory-event-store.js';
export * from './postgres/postgres-event-store.js';
export * from './sqlite/sqlite-event-store.js';
