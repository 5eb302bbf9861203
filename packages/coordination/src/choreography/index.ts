export * from './choreography.js';
export * from './correlation-view.js';
export * from './errors.js';
export * from './participant.js';
export * from './saga-event.js';
