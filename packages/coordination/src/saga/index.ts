export * from './definition.js';
export * from './errors.js';
export * from './memory-saga-store.js';
export * from './operator-alert.js';
export * from './postgres-saga-store.js';
export * from './saga-engine.js';
export type { SagaEvent } from './saga-events.js';
export * from './saga-store.js';
export * from './sqlite-saga-store.js';
