import type { StratusEvent } from '@stratus/core';
import type { SagaOperatorAlert } from './operator-alert.js';
import type { RecordedError } from './saga-store.js';

/** An event as the saga engine hands it to be emitted: its emitter adds who and when. */
export type SagaEventDetail =
  | { readonly type: 'started'; readonly sagaId: string; readonly definition: string }
  | {
      readonly type: 'resumed';
      readonly sagaId: string;
      readonly definition: string;
      readonly status: string;
    }
  | {
      readonly type: 'step-completed';
      readonly sagaId: string;
      readonly definition: string;
      readonly step: string;
      readonly attempts: number;
    }
  | {
      readonly type: 'step-failed';
      readonly sagaId: string;
      readonly definition: string;
      readonly step: string;
      readonly phase: 'do' | 'undo';
      readonly attempt: number;
      /** False when this was the last attempt (retries used up, or the error is not retryable). */
      readonly willRetry: boolean;
      readonly error: RecordedError;
    }
  | {
      readonly type: 'compensating';
      readonly sagaId: string;
      readonly definition: string;
      readonly failedStep: string;
      readonly error: RecordedError;
    }
  | {
      readonly type: 'step-undone';
      readonly sagaId: string;
      readonly definition: string;
      readonly step: string;
      readonly by: 'undo' | 'operator';
    }
  | { readonly type: 'compensated'; readonly sagaId: string; readonly definition: string }
  | { readonly type: 'completed'; readonly sagaId: string; readonly definition: string }
  | {
      readonly type: 'needs-operator';
      readonly sagaId: string;
      readonly definition: string;
      readonly alert: SagaOperatorAlert;
    };

export type SagaEvent = StratusEvent & { readonly component: 'saga' } & SagaEventDetail;
