export * from './harness.js';
export * from './report.js';
export * from './stats.js';
