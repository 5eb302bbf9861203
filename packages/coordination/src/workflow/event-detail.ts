import type { WorkflowEvent } from './events.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** An event as the engine's or the Supervisor's parts hand it to be emitted: its emitter adds who and when. */
export type WorkflowEventDetail = DistributiveOmit<WorkflowEvent, 'component' | 'name' | 'at'>;
